// The cost of viewers to the server, measured on the server side (it runs where there is no
// browser, e.g. the GPU machine): the real slicestream-detector streams into the real
// slicestream-server at a fixed offered rate (default: FleX-ray, 83 frames/s) while 0, 1 or more
// WebSocket clients read every image as a browser does, or one client reads nothing (a stalled
// browser); then, during a scan, a WebSocket client moves a slice again and again and waits for
// the server's image of it at the new place (the server's part of "drag -> new slice on
// screen"). Prints tables; --json FILE writes them. bench/web/README.md has the details.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "bench_programs.hpp"
#include "bench_report.hpp"
#include "ingest_step.hpp"
#include "viewer_socket.hpp"

namespace slicestream::bench {
namespace {

struct Options {
  BenchPrograms programs;
  std::string preset = "flexray";
  int rows = 0;
  int cols = 0;
  int window = 0;
  double fps = 83;
  std::uint64_t frames = 450;
  int slice_size = 400;
  std::vector<int> readers = {0, 1, 4};
  bool slow_reader = true;
  int moves = 40;
  double drag_seconds = 30;  // the scan the moves run in
  std::string encoding = "f16";
  std::string work_dir;
  std::string json;
};

struct Percentiles {
  double p50 = 0, p99 = 0, max = 0;
};

Percentiles percentiles(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    return values[std::min(values.size() - 1,
                           static_cast<std::size_t>(std::ceil(q * values.size())) - 1)];
  };
  return {at(0.5), at(0.99), values.back()};
}

StepConfig step_config(const Options& o, const std::string& tag, std::uint64_t frames) {
  StepConfig c;
  c.server_args = {"--slice-size", std::to_string(o.slice_size)};
  use_programs(o.programs, c);
  c.preset = o.preset;
  c.rows = o.rows;
  c.cols = o.cols;
  c.window = o.window;
  c.frames = frames;
  c.offered_fps = o.fps;
  c.work_dir = o.work_dir;
  c.tag = tag;
  return c;
}

// One scan with `readers` clients reading everything (and a stalled one with `slow`).
bool frame_rate_case(const Options& o, int readers, bool slow, Report& report) {
  const std::string name = slow ? "1 stalled client" : std::to_string(readers) + " reading";
  StepConfig c =
      step_config(o, "rate-" + std::to_string(readers) + (slow ? "-slow" : ""), o.frames);
  const int port = free_tcp_port();
  c.http_listen = "127.0.0.1:" + std::to_string(port);
  std::vector<std::unique_ptr<ViewerSocket>> sockets;
  c.on_server_ready = [&](const Endpoints&) {
    for (int k = 0; k < readers; ++k) {
      sockets.push_back(std::make_unique<ViewerSocket>(port, "?encoding=" + o.encoding));
      sockets.back()->start_reading();
    }
    // A client that never reads: its socket buffers fill, then the server keeps only the
    // latest image per slice for it.
    if (slow) sockets.push_back(std::make_unique<ViewerSocket>(port, "?encoding=f32", 4096));
  };
  const StepResult r = run_ingest_step(c);
  double images = 0, megabytes = 0;
  for (std::size_t k = 0; k < sockets.size() && k < static_cast<std::size_t>(readers); ++k) {
    images += static_cast<double>(sockets[k]->images());
    megabytes += static_cast<double>(sockets[k]->bytes()) / 1e6;
  }
  sockets.clear();
  if (!r.ok) std::fprintf(stderr, "%s: %s\n", name.c_str(), r.failure.c_str());
  const double seconds = r.scan_seconds > 0 ? r.scan_seconds : 1;
  report.add("frame rate with WebSocket clients")
      .set("clients", name)
      .set("status", !r.ok                      ? "FAILED"
                     : r.integrated == c.frames ? "ok"
                                                : "LOSS")
      .set("offered f/s", o.fps, 1)
      .set("frames", static_cast<double>(c.frames), 0)
      .set("integrated", static_cast<double>(r.integrated), 0)
      .set("sustained f/s", r.sustained_fps, 1)
      .set("lat p50 ms", r.latency.p50_us() / 1000, 2)
      .set("lat p99 ms", r.latency.p99_us() / 1000, 2)
      .set("images/s per client", readers ? images / readers / seconds : 0, 1)
      .set("MB/s per client", readers ? megabytes / readers / seconds : 0, 2)
      .set("backend", r.backend);
  return r.ok && r.integrated == c.frames;
}

// During a scan: move the axial default slice (2) up and down, timing each image.
bool drag_case(const Options& o, Report& report) {
  const auto moves = static_cast<std::uint64_t>(o.moves);
  StepConfig c = step_config(o, "drag", static_cast<std::uint64_t>(o.fps * o.drag_seconds));
  const int port = free_tcp_port();
  c.http_listen = "127.0.0.1:" + std::to_string(port);
  std::vector<double> times;
  int failures = 0;
  std::thread mover;
  c.on_server_ready = [&](const Endpoints&) {
    mover = std::thread([&] {
      try {
        ViewerSocket ws(port, "?encoding=" + o.encoding);
        float place[9];
        if (!ws.wait_for_slice(2, 1, place, std::chrono::seconds(120))) {
          ++failures;
          return;
        }
        const float step = 0.1f * std::max(std::abs(place[4]), std::abs(place[0]));
        for (std::uint64_t i = 0; i < moves; ++i) {
          float moved[9];
          std::copy(std::begin(place), std::end(place), std::begin(moved));
          moved[8] += (i % 2 ? -1.0f : 1.0f) * step * static_cast<float>(1 + i % 3);
          const double ms =
              ws.move_slice(2, moved, o.slice_size, o.slice_size, std::chrono::seconds(20));
          if (ms < 0) {
            ++failures;
          } else {
            times.push_back(ms);
          }
        }
      } catch (const std::exception& error) {
        std::fprintf(stderr, "drag: %s\n", error.what());
        ++failures;
      }
    });
  };
  const StepResult r = run_ingest_step(c);
  if (mover.joinable()) mover.join();
  const Percentiles p = percentiles(times);
  report.add("drag -> new slice, server side")
      .set("moves", static_cast<double>(times.size()), 0)
      .set("failed", failures, 0)
      .set("slice", std::to_string(o.slice_size) + "x" + std::to_string(o.slice_size))
      .set("offered f/s", o.fps, 1)
      .set("p50 ms", p.p50, 2)
      .set("p99 ms", p.p99, 2)
      .set("max ms", p.max, 2)
      .set("scan", r.ok ? "ok" : "FAILED")
      .set("backend", r.backend);
  return r.ok && failures == 0 && times.size() == moves;
}

}  // namespace
}  // namespace slicestream::bench

int main(int argc, char** argv) {
  using namespace slicestream::bench;
  Options o;
  CLI::App app{
      "web_bench: what WebSocket viewers cost the server, and the time from a slice move "
      "to its image (server side)"};
  add_program_options(app, o.programs);
  app.add_option("--preset", o.preset, "detector preset")->capture_default_str();
  app.add_option("--rows", o.rows, "detector rows (0: the preset's)");
  app.add_option("--cols", o.cols, "detector columns (0: the preset's)");
  app.add_option("--window", o.window, "projections per rotation (0: the preset's)");
  app.add_option("--fps", o.fps, "offered frame rate")->capture_default_str();
  app.add_option("--frames", o.frames, "projections per frame-rate case")->capture_default_str();
  app.add_option("--slice-size", o.slice_size, "the default slices' edge")->capture_default_str();
  app.add_option("--readers", o.readers, "reading clients per case")->delimiter(',');
  app.add_flag("!--no-slow", o.slow_reader, "skip the stalled-client case");
  app.add_option("--moves", o.moves, "slice moves timed (0: none)")->capture_default_str();
  app.add_option("--drag-seconds", o.drag_seconds, "length of the scan the moves run in")
      ->capture_default_str();
  app.add_option("--encoding", o.encoding, "f16 or f32")->capture_default_str();
  app.add_option("--work-dir", o.work_dir, "logs (default: a temporary folder)");
  app.add_option("--json", o.json, "write the results as JSON");
  CLI11_PARSE(app, argc, argv);
  if (!programs_runnable(o.programs)) return 1;
  if (o.work_dir.empty()) {
    o.work_dir = (std::filesystem::temp_directory_path() /
                  ("slicestream-web-bench-" + std::to_string(getpid())))
                     .string();
  }
  std::filesystem::create_directories(o.work_dir);

  Report report;
  bool ok = true;
  for (int readers : o.readers)
    ok = frame_rate_case(o, readers, false, report) && ok;
  if (o.slow_reader) ok = frame_rate_case(o, 0, true, report) && ok;
  if (o.moves > 0) ok = drag_case(o, report) && ok;
  report.print("frame rate with WebSocket clients");
  report.print("drag -> new slice, server side");
  report.note("preset", o.preset);
  report.note("encoding", o.encoding);
  if (!o.json.empty()) report.write_json(o.json, "");
  std::printf("logs: %s\n", o.work_dir.c_str());
  return ok ? 0 : 1;  // 1: a case failed, lost frames or a move got no image
}
