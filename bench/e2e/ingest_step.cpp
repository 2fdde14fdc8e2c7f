#include "ingest_step.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include <zmq.hpp>

#include "child_process.hpp"
#include "clients/common/request_client.hpp"
#include "kernels/steady_clock.hpp"
#include "scan_progress.hpp"
#include "thread_cpu.hpp"

namespace slicestream::bench {

namespace {

constexpr auto kServerStartTimeout = std::chrono::seconds(60);  // CUDA start-up included
constexpr auto kServerStopGrace = std::chrono::seconds(30);
constexpr int kStatusTimeoutMs = 10000;  // one reply waits for the reconstruct item in progress
constexpr int kBindAttempts = 3;         // a probed tcp port may be taken before the server binds

std::string port_endpoint(zmq::context_t& context) {
  zmq::socket_t probe(context, zmq::socket_type::pull);
  probe.set(zmq::sockopt::linger, 0);
  probe.bind("tcp://127.0.0.1:*");
  return probe.get(zmq::sockopt::last_endpoint);
}

std::vector<std::string> server_command(const StepConfig& c, const Endpoints& endpoints) {
  std::vector<std::string> argv = {
      c.server_path, "--backend",      c.backend,    "--data",           endpoints.data,
      "--slices",    endpoints.slices, "--requests", endpoints.requests, "--stats-interval",
      "1",           "--http",         c.http_listen};
  if (c.data_hwm > 0) argv.insert(argv.end(), {"--data-hwm", std::to_string(c.data_hwm)});
  argv.insert(argv.end(), c.server_args.begin(), c.server_args.end());
  return argv;
}

}  // namespace

std::uint64_t counter(const v1::StatusReport& status, const std::string& name) {
  const auto it = status.counters().find(name);
  return it == status.counters().end() ? 0 : it->second;
}

std::vector<std::string> detector_command(const StepConfig& c, const Endpoints& endpoints) {
  std::vector<std::string> argv = {c.detector_path, "simulate",
                                   "--preset",      c.preset,
                                   "--data",        endpoints.data,
                                   "--fps",         std::to_string(c.offered_fps),
                                   "--frames",      std::to_string(c.frames),
                                   "--darks",       "1",
                                   "--flats",       "1",
                                   "--scan-id",     std::to_string(c.scan_id),
                                   "--quiet"};
  if (endpoints.requests.empty()) {
    argv.push_back("--no-confirm");
  } else {
    argv.insert(argv.end(), {"--requests", endpoints.requests});
  }
  if (c.send_hwm > 0) argv.insert(argv.end(), {"--send-hwm", std::to_string(c.send_hwm)});
  if (c.rows > 0) argv.insert(argv.end(), {"--rows", std::to_string(c.rows)});
  if (c.cols > 0) argv.insert(argv.end(), {"--cols", std::to_string(c.cols)});
  if (c.window > 0) {
    argv.insert(argv.end(), {"--projections-per-rotation", std::to_string(c.window)});
  }
  argv.insert(argv.end(), c.detector_args.begin(), c.detector_args.end());
  return argv;
}

// Starts the server and waits until it answers GetStatus; retries with fresh endpoints when a
// probed tcp port was taken in between.
std::unique_ptr<ChildProcess> start_server(const StepConfig& c, Endpoints& endpoints,
                                           std::unique_ptr<client::RequestClient>& client,
                                           v1::StatusReport& status) {
  for (int attempt = 1;; ++attempt) {
    endpoints = make_endpoints(c.transport, c.work_dir, c.tag);
    auto server = std::make_unique<ChildProcess>(server_command(c, endpoints),
                                                 c.work_dir + "/" + c.tag + "-server.log");
    client = std::make_unique<client::RequestClient>(endpoints.requests, 250);
    const SteadyClock::time_point deadline = SteadyClock::now() + kServerStartTimeout;
    while (true) {
      try {
        client::Response response = client->get_status();
        if (response.ok()) {
          status = response.reply.status();
          client->set_timeout_ms(kStatusTimeoutMs);
          return server;
        }
      } catch (const client::TimeoutError&) {
      }
      if (const std::optional<int> exited = server->poll()) {
        const std::string log = server->log_tail(12);
        if (attempt < kBindAttempts && log.find("in use") != std::string::npos) break;
        throw std::runtime_error("the server exited with status " + std::to_string(*exited) +
                                 " at start-up:\n" + log);
      }
      if (SteadyClock::now() > deadline) {
        throw std::runtime_error("the server did not answer GetStatus within 60 s:\n" +
                                 server->log_tail(12));
      }
    }
  }
}

const char* to_string(Transport transport) {
  return transport == Transport::kTcp ? "tcp" : "ipc";
}

Endpoints make_endpoints(Transport transport, const std::string& dir, const std::string& tag) {
  if (transport == Transport::kIpc) {
    const std::string base = "ipc://" + dir + "/" + tag;
    return {base + "-data", base + "-slices", base + "-requests"};
  }
  // Probed together so that the three differ; the server binds them right after.
  zmq::context_t context(1);
  return {port_endpoint(context), port_endpoint(context), port_endpoint(context)};
}

std::string bare_endpoint(Transport transport, const std::string& dir, const std::string& tag) {
  return transport == Transport::kIpc ? "ipc://" + dir + "/" + tag + "-bare"
                                      : std::string("tcp://127.0.0.1:*");
}

StepResult run_ingest_step(const StepConfig& c) {
  StepResult r;
  const SteadyClock::time_point begin = SteadyClock::now();
  const SteadyClock::time_point deadline = begin + clock_duration(c.timeout_s);
  Endpoints endpoints;
  std::unique_ptr<client::RequestClient> client;
  v1::StatusReport status;
  std::unique_ptr<ChildProcess> server;
  try {
    server = start_server(c, endpoints, client, status);
  } catch (const std::exception& error) {
    r.failure = error.what();
    return r;
  }
  r.server_started = true;
  r.backend = status.backend() + " (" + status.backend_device() + ")";
  r.server_start_s = seconds_since(begin);

  if (c.on_server_ready) c.on_server_ready(endpoints);
  ChildProcess detector(detector_command(c, endpoints), c.work_dir + "/" + c.tag + "-detector.log");
  std::vector<ProgressSample> samples;  // the integrated count, polled
  std::optional<v1::StatusReport> mid_scan;
  ScanThreadLoad threads({server->pid(), detector.pid()});
  std::optional<int> detector_status;
  SteadyClock::time_point detector_exit;
  std::uint64_t last_count = 0;
  SteadyClock::time_point last_change = SteadyClock::now();
  const auto stall = clock_duration(c.stall_s);
  const auto interval = clock_duration(c.poll_interval_s);
  SteadyClock::time_point next_poll = SteadyClock::now();
  while (true) {
    std::this_thread::sleep_until(next_poll);
    next_poll += interval;
    try {
      client::Response response = client->get_status();
      if (response.ok()) {
        status = response.reply.status();
        const std::uint64_t integrated = counter(status, "projections_integrated");
        samples.push_back({seconds_since(begin), integrated});
        if (integrated != last_count) {
          last_count = integrated;
          last_change = SteadyClock::now();
        }
        if (!mid_scan && 2 * integrated >= c.frames) mid_scan = status;
        threads.observe(samples.back().t_s, integrated, c.frames);
      }
    } catch (const client::TimeoutError&) {
      if (server->poll()) {
        r.failure = "the server exited with status " + std::to_string(*server->poll()) +
                    " during the scan:\n" + server->log_tail(12);
        break;
      }
    }
    if (!detector_status) {
      detector_status = detector.poll();
      if (detector_status) detector_exit = SteadyClock::now();
    }
    if (detector_status && *detector_status != 0) {
      r.failure = "the detector exited with status " + std::to_string(*detector_status) + ":\n" +
                  detector.log_tail(12);
      break;
    }
    r.scan_ended = status.scan_id() == c.scan_id && status.scan_state() == "ended";
    if (r.scan_ended && detector_status) break;
    // Everything was sent, but the server stopped integrating without seeing the scan's end: the
    // rest never reached it (counted as lost).
    if (detector_status && SteadyClock::now() - std::max(last_change, detector_exit) > stall) break;
    if (SteadyClock::now() > deadline) {
      r.failure = "the step did not finish within " + std::to_string(c.timeout_s) +
                  " s (scan state '" + status.scan_state() + "', " +
                  std::to_string(counter(status, "projections_integrated")) + " of " +
                  std::to_string(c.frames) + " integrated)\n  detector log:\n" +
                  detector.log_tail(6) + "  server log:\n" + server->log_tail(6);
      break;
    }
  }

  r.sent = detector_status && *detector_status == 0 ? c.frames : 0;
  r.received = counter(status, "frames_received") - counter(status, "darks_received") -
               counter(status, "flats_received");
  r.integrated = counter(status, "projections_integrated");
  r.payloads_realigned = counter(status, "payloads_realigned");
  for (const auto& [reason, count] : status.discards()) {
    r.discards[reason] = count;
    r.discarded += count;
  }
  r.latency = status.frame_to_slice();
  const v1::StatusReport& busy = mid_scan ? *mid_scan : status;
  for (const v1::StageStatus& stage : busy.stages()) {
    if (stage.busy_fraction() >= r.busiest_fraction) {
      r.busiest_fraction = stage.busy_fraction();
      r.busiest_stage = stage.name();
    }
  }
  r.server_threads = threads.load(0);
  r.detector_threads = threads.load(1);
  const double frames = static_cast<double>(c.frames);
  r.sustained_fps = sustained_rate(samples, frames);
  r.scan_seconds = crossing_time(samples, frames) - crossing_time(samples, 1);
  if (r.scan_seconds > 0) {
    r.publish_wait_fraction =
        1e-6 * static_cast<double>(counter(status, "publish_readback_wait_us")) / r.scan_seconds;
    r.publish_copy_fraction =
        1e-6 * static_cast<double>(counter(status, "publish_copy_us")) / r.scan_seconds;
  }

  const int server_exit = server->stop(kServerStopGrace);
  if (r.failure.empty() && server_exit != 0) {
    r.failure = "the server exited with status " + std::to_string(server_exit) +
                " after SIGTERM:\n" + server->log_tail(12);
  }
  r.ok = r.failure.empty();
  return r;
}

}  // namespace slicestream::bench
