// End-to-end ingest benchmark: the real slicestream-detector streaming into the
// real slicestream-server over tcp (loopback) and ipc, at a ladder of frame rates, next to bare
// ZeroMQ PUSH/PULL throughput for the same frame size measured in the same run. For every
// set-up (the detector presets) and transport it reports the offered and sustained frame rate,
// GB/s, projections sent / integrated / lost, frame arrival -> slice publication latency
// (p50/p99, the server's GetStatus) and ingest / bare. Prints the tables; --json FILE writes them.
// Exit status: 0 every step integrated every frame, 1 a step could not run, 2 frames were lost or
// discarded. README.md: how to run, what each column means, results.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bare_push_pull.hpp"
#include "bench_programs.hpp"
#include "bench_report.hpp"
#include "clients/detector/detector_preset.hpp"
#include "clients/detector/scan_streamer.hpp"
#include "detector_bare_pull.hpp"
#include "ingest_step.hpp"
#include "server/server_config.hpp"
#include "thread_cpu.hpp"

namespace slicestream::bench {
namespace {

constexpr double kBytesPerGB = 1e9;
constexpr double kTargetRatio = 0.9;  // ingest >= 90% of bare ZeroMQ, every frame integrated
constexpr std::uint64_t kBareWarmupFrames = 20;

struct Options {
  BenchPrograms programs;
  std::vector<std::string> setups = {"flexray", "highspeed", "tomobank"};
  std::vector<std::string> transports = {"tcp", "ipc"};
  std::vector<double> ladder = {0.25, 0.5, 0.75, 1.0};
  std::vector<double> rates;  // absolute offered rates; replace the ladder when given
  bool max_step = true;
  // Long enough for the steady state: in the first second the stages still fill (a FleX-ray step
  // of 5000 frames at 11000 frames/s showed its busiest stage half as busy as a 4 s one).
  double seconds = 4.0;
  std::uint64_t min_frames = 50;
  std::uint64_t max_frames = 50000;
  double bare_seconds = 3.0;
  int rows = 0;
  int cols = 0;
  int window = 0;
  int data_hwm = ServerConfig::kDefaultDataHwm;
  int send_hwm = 0;
  std::string detector_args;
  double poll_interval_s = 0.02;
  double step_timeout_s = 300;
  double stall_timeout_s = 10;
  std::string work_dir;
  bool keep_logs = false;
  int repeat = 1;
  std::string json;
};

struct SetUp {
  std::string name;
  int rows = 0;
  int cols = 0;
  int window = 0;  // the preset's projections per rotation
  std::size_t frame_bytes() const { return static_cast<std::size_t>(rows) * cols * 2; }
};

std::string host_description() {
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  std::string cpu = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  double load[1] = {0};
  const int loads = getloadavg(load, 1);
  char text[512];
  std::snprintf(text, sizeof text, "%s: %ld cores, %s, load average %.1f at the end", name,
                sysconf(_SC_NPROCESSORS_ONLN), cpu.c_str(), loads == 1 ? load[0] : -1.0);
  return text;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%g%%", 100 * fraction);
  return text;
}

std::string format_rate(double fps) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", fps);
  return text;
}

std::uint64_t frames_for(double fps, const Options& o) {
  const double frames = std::round(fps * o.seconds);
  return std::clamp(static_cast<std::uint64_t>(std::max(frames, 0.0)), o.min_frames, o.max_frames);
}

void add_options(CLI::App& app, Options& o) {
  app.option_defaults()->always_capture_default();
  add_program_options(app, o.programs);
  app.add_option("--setups", o.setups, "detector presets to run")
      ->delimiter(',')
      ->check(CLI::IsMember({"flexray", "highspeed", "tomobank"}));
  app.add_option("--transports", o.transports, "tcp (loopback) and/or ipc")
      ->delimiter(',')
      ->check(CLI::IsMember({"tcp", "ipc"}));
  app.add_option("--ladder", o.ladder, "offered rates as fractions of the bare ZeroMQ rate")
      ->delimiter(',')
      ->check(CLI::Range(0.001, 100.0));
  app.add_option("--rates", o.rates,
                 "offered rates in frames/s instead of the ladder (e.g. 100,200)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_flag("!--no-max", o.max_step,
               "skip the step that streams as fast as back-pressure allows");
  app.add_option("--seconds", o.seconds, "streaming time per step at its offered rate")
      ->check(CLI::PositiveNumber);
  app.add_option("--min-frames", o.min_frames, "fewest projections per step")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-frames", o.max_frames,
                 "most projections per step (keeps slow backends short)")
      ->check(CLI::PositiveNumber);
  app.add_option("--bare-seconds", o.bare_seconds, "measured time of each bare PUSH/PULL run")
      ->check(CLI::PositiveNumber);
  app.add_option("--rows", o.rows, "detector rows of every set-up (default: the preset's)")
      ->check(CLI::PositiveNumber);
  app.add_option("--cols", o.cols, "detector columns of every set-up (default: the preset's)")
      ->check(CLI::PositiveNumber);
  app.add_option("--window", o.window,
                 "at most this many projections per rotation (the server's window, and the "
                 "positions the detector precomputes per step; default: the preset's)")
      ->check(CLI::PositiveNumber);
  app.add_option("--data-hwm", o.data_hwm, "the server's --data-hwm, and the bare PULL's RCVHWM")
      ->check(CLI::PositiveNumber);
  app.add_option("--send-hwm", o.send_hwm,
                 "the detector's --send-hwm, and the bare PUSH's SNDHWM (default: the "
                 "detector's, by frame size)")
      ->check(CLI::PositiveNumber);
  app.add_option("--detector-args", o.detector_args,
                 "more detector flags, one string: --detector-args=\"--noise\"");
  app.add_option("--poll-interval", o.poll_interval_s, "seconds between GetStatus polls")
      ->check(CLI::Range(0.001, 1.0));
  app.add_option("--step-timeout", o.step_timeout_s, "seconds one step may take")
      ->check(CLI::PositiveNumber);
  app.add_option("--stall-timeout", o.stall_timeout_s,
                 "seconds without progress, after the detector has sent everything, before the "
                 "rest of the scan counts as lost")
      ->check(CLI::PositiveNumber);
  app.add_option("--work-dir", o.work_dir,
                 "logs and ipc sockets (default: a new /tmp/slicestream-e2e.* directory, removed "
                 "after a clean run)");
  app.add_flag("--keep-logs", o.keep_logs, "keep the work directory after a clean run");
  app.add_option("--repeat", o.repeat,
                 "repetitions of every set-up and transport (bare references and steps in turn); "
                 "from 2 on, a summary of the ratios' median and spread")
      ->check(CLI::Range(1, 100));
  app.add_option("--json", o.json, "write the results as JSON to FILE");
}

struct Run {
  Report report;
  std::string backend;
  bool failed = false;  // a step could not run (a program failed, a timeout)
  bool lost = false;    // a step lost or discarded frames
};

// One step's rows: the main table and the details.
void report_step(Run& run, const SetUp& setup, Transport transport, const std::string& label,
                 const StepConfig& c, const StepResult& r, const BareResult& bare,
                 const DetectorBareResult& detector_bare) {
  const double frame_bytes = static_cast<double>(setup.frame_bytes());
  const std::uint64_t lost = c.frames - std::min(c.frames, r.integrated);
  const bool lossless = r.ok && r.scan_ended && lost == 0 && r.discarded == 0;
  const double ratio = bare.frames_per_s > 0 ? r.sustained_fps / bare.frames_per_s : 0;
  const double detector_ratio =
      detector_bare.sustained_fps > 0 ? r.sustained_fps / detector_bare.sustained_fps : NAN;
  run.report.add("end to end")
      .set("set-up", setup.name)
      .set("transport", to_string(transport))
      .set("step", label)
      .set("status", !r.ok      ? "FAILED"
                     : lossless ? "ok"
                                : "LOSS")
      .set("offered f/s", c.offered_fps > 0 ? c.offered_fps : NAN, 1)
      .set("frames", static_cast<double>(c.frames), 0)
      .set("integrated", static_cast<double>(r.integrated), 0)
      .set("lost", r.ok ? static_cast<double>(lost) : NAN, 0)
      .set("sustained f/s", r.sustained_fps, 1)
      .set("GB/s", r.sustained_fps * frame_bytes / kBytesPerGB, 3)
      .set("lat p50 ms", r.latency.p50_us() / 1000, 2)
      .set("lat p99 ms", r.latency.p99_us() / 1000, 2)
      .set("bare f/s", bare.frames_per_s, 1)
      .set("bare GB/s", bare.bytes_per_s / kBytesPerGB, 3)
      .set("ingest/bare", ratio, 3)
      .set("det->bare f/s", detector_bare.ok ? detector_bare.sustained_fps : NAN, 1)
      .set("ingest/det->bare", detector_ratio, 3);
  std::string discards;
  for (const auto& [reason, count] : r.discards)
    discards += (discards.empty() ? "" : " ") + reason + "=" + std::to_string(count);
  run.report.add("end to end, details")
      .set("set-up", setup.name)
      .set("transport", to_string(transport))
      .set("step", label)
      .set("scan ended", r.scan_ended ? "yes" : "NO")
      .set("discards", discards.empty() ? std::string("none") : discards)
      .set(
          "busiest stage (mid-scan)",
          r.busiest_stage.empty()
              ? std::string("-")
              : r.busiest_stage + " " + std::to_string(std::lround(100 * r.busiest_fraction)) + "%")
      .set("publish: readback wait %", 100 * r.publish_wait_fraction, 0)
      .set("publish: copy %", 100 * r.publish_copy_fraction, 0)
      .set("received", static_cast<double>(r.received), 0)
      .set("lat max ms", r.latency.max_us() / 1000, 2)
      .set("latency samples", static_cast<double>(r.latency.count()), 0)
      .set("scan s", r.scan_seconds, 2)
      .set("server start s", r.server_start_s, 2)
      .set("realigned", static_cast<double>(r.payloads_realigned), 0)
      .set("server threads CPU (20-90 %)", describe_thread_load(r.server_threads, 5))
      .set("detector threads CPU", describe_thread_load(r.detector_threads, 2));
  std::fprintf(stderr,
               "    %s: sustained %.1f frames/s (%.3f GB/s, %.3f of bare, %.3f of detector -> "
               "bare), %llu of %llu integrated, latency p50 %.2f ms p99 %.2f ms\n",
               !r.ok      ? "FAILED"
               : lossless ? "ok"
                          : "LOSS",
               r.sustained_fps, r.sustained_fps * frame_bytes / kBytesPerGB, ratio, detector_ratio,
               static_cast<unsigned long long>(r.integrated),
               static_cast<unsigned long long>(c.frames), r.latency.p50_us() / 1000,
               r.latency.p99_us() / 1000);
  if (!r.ok) std::fprintf(stderr, "    %s\n", r.failure.c_str());
}

BareResult run_bare(const Options& o, const SetUp& setup, Transport transport, int send_hwm,
                    const std::string& tag, Run& run) {
  BareOptions bare_options;
  bare_options.endpoint = bare_endpoint(transport, o.work_dir, tag);
  bare_options.rows = setup.rows;
  bare_options.cols = setup.cols;
  bare_options.send_hwm = send_hwm;
  bare_options.receive_hwm = o.data_hwm;
  bare_options.seconds = o.bare_seconds;
  bare_options.warmup_frames = kBareWarmupFrames;
  const double frame_mb = static_cast<double>(setup.frame_bytes()) / 1e6;
  std::fprintf(stderr, "%s %s: bare ZeroMQ PUSH/PULL, %.3f MB frames, HWM %d / %d\n",
               setup.name.c_str(), to_string(transport), frame_mb, send_hwm, o.data_hwm);
  const BareResult bare = measure_bare_push_pull(bare_options);
  run.report.add("bare ZeroMQ PUSH/PULL")
      .set("set-up", setup.name)
      .set("transport", to_string(transport))
      .set("frame MB", frame_mb, 3)
      .set("frames", static_cast<double>(bare.frames), 0)
      .set("seconds", bare.seconds, 2)
      .set("frames/s", bare.frames_per_s, 1)
      .set("GB/s", bare.bytes_per_s / kBytesPerGB, 3)
      .set("send HWM", send_hwm, 0)
      .set("receive HWM", o.data_hwm, 0);
  std::fprintf(stderr, "  bare: %.1f frames/s, %.3f GB/s\n", bare.frames_per_s,
               bare.bytes_per_s / kBytesPerGB);
  return bare;
}

// One scan of `setup` over `transport` at `offered_fps` (0: as fast as back-pressure allows).
StepConfig step_config(const Options& o, const SetUp& setup, Transport transport, int send_hwm,
                       const std::string& tag, std::uint64_t scan_id, double offered_fps,
                       std::uint64_t frames) {
  StepConfig c;
  use_programs(o.programs, c);
  c.detector_args = split_words(o.detector_args);
  c.preset = setup.name;
  c.rows = o.rows;
  c.cols = o.cols;
  c.window = o.window > 0 && o.window < setup.window ? o.window : 0;
  c.frames = frames;
  c.offered_fps = offered_fps;
  c.scan_id = scan_id;
  c.data_hwm = o.data_hwm;
  c.send_hwm = send_hwm;
  c.transport = transport;
  c.work_dir = o.work_dir;
  c.tag = tag + "-" + std::to_string(scan_id);
  c.poll_interval_s = o.poll_interval_s;
  c.timeout_s = o.step_timeout_s;
  c.stall_s = o.stall_timeout_s;
  return c;
}

// The real detector streaming at full speed into a bare PULL socket: the reference of the same
// process layout and sender as a step, with `frames` as many as the max step's.
DetectorBareResult run_detector_bare(const Options& o, const SetUp& setup, Transport transport,
                                     int send_hwm, const std::string& tag, std::uint64_t frames,
                                     std::uint64_t& scan_id, Run& run) {
  const StepConfig c = step_config(o, setup, transport, send_hwm, tag + "-detector-bare", ++scan_id,
                                   /*offered_fps=*/0, frames);
  std::fprintf(stderr, "%s %s: detector -> bare PULL, %llu projections at full speed\n",
               setup.name.c_str(), to_string(transport), static_cast<unsigned long long>(frames));
  DetectorBareResult r;
  try {
    r = measure_detector_to_bare_pull(c);
  } catch (const std::exception& error) {
    r.failure = error.what();
  }
  const double frame_bytes = static_cast<double>(setup.frame_bytes());
  run.report.add("detector -> bare PULL")
      .set("set-up", setup.name)
      .set("transport", to_string(transport))
      .set("status", r.ok ? "ok" : "FAILED")
      .set("frames", static_cast<double>(frames), 0)
      .set("received", static_cast<double>(r.received), 0)
      .set("sustained f/s", r.sustained_fps, 1)
      .set("GB/s", r.sustained_fps * frame_bytes / kBytesPerGB, 3)
      .set("receiver threads CPU (20-90 %)", describe_thread_load(r.receiver_threads, 2))
      .set("detector threads CPU", describe_thread_load(r.detector_threads, 2));
  if (r.ok) {
    std::fprintf(stderr, "  detector -> bare: %.1f frames/s\n", r.sustained_fps);
  } else {
    run.failed = true;
    std::fprintf(stderr, "  detector -> bare FAILED: %s\n", r.failure.c_str());
  }
  return r;
}

// The best lossless ratios of one repetition (bare runs and steps) of a set-up and transport.
struct RepetitionResult {
  bool lossless = true;
  double best_ratio = 0;           // ingest / bare ZeroMQ
  double best_detector_ratio = 0;  // ingest / detector -> bare PULL
  bool detector_bare_ok = false;
};

RepetitionResult run_repetition(const Options& o, const SetUp& setup, Transport transport,
                                int repetition, Run& run, std::uint64_t& scan_id) {
  const std::string tag = setup.name + "-" + to_string(transport) +
                          (o.repeat > 1 ? "-r" + std::to_string(repetition) : "");
  const int send_hwm =
      o.send_hwm > 0 ? o.send_hwm : detector::default_send_hwm(setup.frame_bytes());
  if (o.repeat > 1) {
    std::fprintf(stderr, "%s %s: repetition %d of %d\n", setup.name.c_str(), to_string(transport),
                 repetition, o.repeat);
  }
  const BareResult bare = run_bare(o, setup, transport, send_hwm, tag, run);
  const DetectorBareResult detector_bare = run_detector_bare(
      o, setup, transport, send_hwm, tag, frames_for(bare.frames_per_s, o), scan_id, run);

  std::vector<std::pair<std::string, double>> plan;  // label, offered frames/s (0: max)
  for (double rate : o.rates)
    plan.emplace_back(format_rate(rate) + " f/s", rate);
  if (o.rates.empty()) {
    for (double fraction : o.ladder)
      plan.emplace_back(percent(fraction), fraction * bare.frames_per_s);
  }
  if (o.max_step) plan.emplace_back("max", 0);

  double best_ratio = 0;
  double best_detector_ratio = 0;
  bool lossless = true;
  for (const auto& [label, offered_fps] : plan) {
    const StepConfig c =
        step_config(o, setup, transport, send_hwm, tag, ++scan_id, offered_fps,
                    frames_for(offered_fps > 0 ? offered_fps : bare.frames_per_s, o));
    std::fprintf(stderr, "  step %s: %llu projections at %s\n", label.c_str(),
                 static_cast<unsigned long long>(c.frames),
                 offered_fps > 0 ? (format_rate(offered_fps) + " frames/s").c_str()
                                 : "full speed (back-pressure)");
    const StepResult r = run_ingest_step(c);
    if (run.backend.empty() && !r.backend.empty()) run.backend = r.backend;
    report_step(run, setup, transport, label, c, r, bare, detector_bare);
    const bool step_lossless = r.ok && r.scan_ended && r.integrated == c.frames && r.discarded == 0;
    if (!r.ok) run.failed = true;
    if (r.ok && !step_lossless) run.lost = true;
    lossless = lossless && step_lossless;
    if (!r.server_started) {
      std::fprintf(stderr, "  the server did not start: skipping the other steps of %s %s\n",
                   setup.name.c_str(), to_string(transport));
      break;
    }
    if (step_lossless && bare.frames_per_s > 0) {
      best_ratio = std::max(best_ratio, r.sustained_fps / bare.frames_per_s);
    }
    if (step_lossless && detector_bare.sustained_fps > 0) {
      best_detector_ratio =
          std::max(best_detector_ratio, r.sustained_fps / detector_bare.sustained_fps);
    }
  }
  run.report.add("summary")
      .set("set-up", setup.name)
      .set("transport", to_string(transport))
      .set("repetition", repetition, 0)
      .set("every frame integrated", lossless ? "yes" : "NO")
      .set("target met", lossless && best_ratio >= kTargetRatio ? "yes" : "no")
      .set("best lossless ingest/bare", best_ratio, 3)
      .set("target", kTargetRatio, 2)
      .set("best lossless ingest/det->bare", detector_bare.ok ? best_detector_ratio : NAN, 3)
      .set("target met (det->bare)",
           lossless && detector_bare.ok && best_detector_ratio >= kTargetRatio ? "yes" : "no");
  return RepetitionResult{lossless, best_ratio, best_detector_ratio, detector_bare.ok};
}

double median_of(std::vector<double> values) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// --repeat N: the bare references and the steps N times in turn, so that the ratio's spread
// between runs (the detector's own ceiling moves between runs of one host) is measured, and the
// target judged on the median.
void run_transport(const Options& o, const SetUp& setup, Transport transport, Run& run,
                   std::uint64_t& scan_id) {
  std::vector<double> ratios;
  std::vector<double> detector_ratios;
  bool lossless = true;
  bool detector_bare_ok = true;
  for (int repetition = 1; repetition <= o.repeat; ++repetition) {
    const RepetitionResult r = run_repetition(o, setup, transport, repetition, run, scan_id);
    ratios.push_back(r.best_ratio);
    detector_ratios.push_back(r.best_detector_ratio);
    lossless = lossless && r.lossless;
    detector_bare_ok = detector_bare_ok && r.detector_bare_ok;
  }
  if (o.repeat < 2) return;
  const auto [low, high] = std::minmax_element(detector_ratios.begin(), detector_ratios.end());
  const double median = median_of(detector_ratios);
  run.report.add("summary over repetitions")
      .set("set-up", setup.name)
      .set("transport", to_string(transport))
      .set("repetitions", o.repeat, 0)
      .set("every frame integrated", lossless ? "yes" : "NO")
      .set("ingest/det->bare median", detector_bare_ok ? median : NAN, 3)
      .set("min", detector_bare_ok ? *low : NAN, 3)
      .set("max", detector_bare_ok ? *high : NAN, 3)
      .set("ingest/bare median", median_of(ratios), 3)
      .set("target met (median det->bare)",
           lossless && detector_bare_ok && median >= kTargetRatio ? "yes" : "no");
}

}  // namespace
}  // namespace slicestream::bench

int main(int argc, char** argv) {
  using namespace slicestream::bench;
  CLI::App app{
      "End-to-end ingest benchmark: slicestream-detector -> slicestream-server over tcp and ipc "
      "at a ladder of frame rates, beside bare ZeroMQ PUSH/PULL"};
  Options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);
  if (o.min_frames > o.max_frames) {
    std::fprintf(stderr, "--min-frames must not exceed --max-frames\n");
    return 1;
  }
  if (!programs_runnable(o.programs)) return 1;
  const bool own_work_dir = o.work_dir.empty();
  if (own_work_dir) {
    char pattern[] = "/tmp/slicestream-e2e.XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    o.work_dir = pattern;
  } else {
    std::filesystem::create_directories(o.work_dir);
  }

  Run run;
  std::uint64_t scan_id = 0;
  for (const std::string& name : o.setups) {
    const slicestream::detector::DetectorPreset& preset = slicestream::detector::find_preset(name);
    // A rotation is 360 degrees for cone beam, 180 for parallel beam (the detector's default).
    SetUp setup{
        name, o.rows > 0 ? o.rows : preset.detector.rows,
        o.cols > 0 ? o.cols : preset.detector.cols,
        preset.projections_per_180_deg * (preset.beam == slicestream::BeamKind::kCone ? 2 : 1)};
    for (const std::string& transport : o.transports) {
      try {
        run_transport(o, setup, transport == "ipc" ? Transport::kIpc : Transport::kTcp, run,
                      scan_id);
      } catch (const std::exception& error) {
        run.failed = true;
        std::fprintf(stderr, "%s %s FAILED: %s\n", name.c_str(), transport.c_str(), error.what());
      }
    }
  }

  const std::string host = host_description();
  std::printf("\nserver backend: %s\nmachine: %s\n", run.backend.c_str(), host.c_str());
  run.report.print("bare ZeroMQ PUSH/PULL");
  run.report.print("detector -> bare PULL");
  run.report.print("end to end");
  run.report.print("end to end, details");
  run.report.print("summary");
  if (o.repeat > 1) run.report.print("summary over repetitions");
  if (!o.json.empty()) {
    std::string command;
    for (int i = 0; i < argc; ++i)
      command += (i ? " " : "") + std::string(argv[i]);
    run.report.note("benchmark", "e2e_ingest");
    run.report.note("backend", run.backend);
    run.report.note("host", host);
    run.report.note("command", command);
    run.report.write_json(o.json, run.backend);
  }
  if (run.failed || run.lost) {
    std::printf("\n%s; logs in %s\n",
                run.failed ? "a step could not run (see above)" : "frames were lost or discarded",
                o.work_dir.c_str());
    return run.failed ? 1 : 2;
  }
  if (own_work_dir && !o.keep_logs) std::filesystem::remove_all(o.work_dir);
  return 0;
}
