// What a person at RECAST3D waits for: the server in-process with its tomop data port and the
// RECAST3D bridge, the test viewer of tests/server/tomop (RECAST3D's side of the protocol) and a
// tomop adapter, a Tomobank-sized parallel-beam scan (the detector preset: 1800 columns, 300
// projections per 180 degrees; rows configurable). Once the window is full it measures
//   drag:        the viewer's SetSlice of a dragged axial slice (after its RemoveSlice) -> the
//                first SliceData of the new slice at the viewer (a reconstruction from the whole
//                window, 1800 x 1800 pixels by default);
//   projection:  a Projection packet sent by the adapter -> the next SliceData of the axial slice
//                at the viewer (preprocess, filter, the +BP(new) - BP(old) update, publication and
//                the bridge), projections paced slower than --recast3d-rate so none waits for it.
// Prints a table; --json FILE writes it. The machine's load average is recorded beside.
//
//   recast3d_latency_bench [--backend cpu|cuda|auto] [--rows N] [--cols N] [--projections N]
//                          [--slice-size N] [--drags N] [--frames N] [--json FILE]
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>
#include <vector>

#include "bench/common/bench_report.hpp"
#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "server/server.hpp"
#include "tests/server/tomop/test_adapter.hpp"
#include "tests/server/tomop/test_viewer.hpp"

namespace slicestream {
namespace {

using Clock = std::chrono::steady_clock;
using test::TestAdapter;
using test::TestViewer;

struct Options {
  std::string backend = "auto";
  int rows = 2016;
  int cols = 1800;
  int projections = 300;
  int slice_size = 0;  // 0: the detector width
  int drags = 8;
  int frames = 40;
  std::string json;
};

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

double ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

struct Stats {
  double p50 = 0, p90 = 0, max = 0;
  int n = 0;
};
Stats stats(std::vector<double> values) {
  Stats s;
  s.n = static_cast<int>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.p50 = values[values.size() / 2];
  s.p90 = values[std::min(values.size() - 1, values.size() * 9 / 10)];
  s.max = values.back();
  return s;
}

// Raw counts of every projection of the window (flat * exp(-line integral)), computed in parallel.
std::vector<std::vector<float>> phantom_counts(const Options& o, const VolumeBox& box,
                                               const std::vector<double>& angles) {
  const std::vector<phantom::Ellipsoid> phantom = phantom::shepp_logan_3d(box, 0.002);
  const DetectorShape detector{o.rows, o.cols};
  std::vector<std::vector<float>> counts(angles.size());
  std::vector<std::thread> workers;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::size_t i = t; i < angles.size(); i += threads) {
        std::vector<float> line(detector.pixels());
        phantom::project(phantom, BeamKind::kParallel, parallel_vector(angles[i], 1, 1), detector,
                         line.data());
        for (float& v : line)
          v = 100.0f + 40000.0f * std::exp(-v);
        counts[i] = std::move(line);
      }
    });
  }
  for (std::thread& w : workers)
    w.join();
  return counts;
}

// Waits until the viewer has more than `count` images of slice `id`; the arrival time, if any.
std::optional<Clock::time_point> next_image(TestViewer& viewer, std::int32_t id,
                                            std::uint64_t count) {
  if (!viewer.wait_for(
          [&] {
            const auto it = viewer.images().find(id);
            return it != viewer.images().end() && it->second.count > count;
          },
          std::chrono::seconds(120))) {
    return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(viewer.mutex());
  return viewer.images().at(id).arrived;
}

std::uint64_t image_count(TestViewer& viewer, std::int32_t id) {
  std::lock_guard<std::mutex> lock(viewer.mutex());
  const auto it = viewer.images().find(id);
  return it == viewer.images().end() ? 0 : it->second.count;
}

int run(const Options& o) {
  spdlog::set_level(spdlog::level::warn);
  TestViewer viewer("tcp://127.0.0.1:*", "tcp://127.0.0.1:*");
  ServerConfig config;
  config.endpoints = {"tcp://127.0.0.1:*", "tcp://127.0.0.1:*", "tcp://127.0.0.1:*"};
  config.stats_interval_s = 0;
  config.pipeline.preview_size = 0;
  config.pipeline.refinement.residual_interval_s = 0;
  config.tomop.data = "tcp://127.0.0.1:*";
  config.tomop.recast3d.requests = viewer.requests_address();
  config.tomop.recast3d.updates = viewer.updates_address();
  config.tomop.recast3d.slice_size = o.slice_size > 0 ? o.slice_size : o.cols;
  const BackendKind kind = o.backend == "cpu"    ? BackendKind::kCpu
                           : o.backend == "cuda" ? BackendKind::kCuda
                                                 : BackendKind::kAuto;
  std::unique_ptr<Backend> backend = make_backend(kind, BackendOptions{});
  const BackendInfo info = backend->info();
  Server server(config, std::move(backend));
  server.start();
  if (!viewer.wait_for([&] { return viewer.controls().size() == 5; })) {
    std::fprintf(stderr, "the bridge made no scene in the viewer\n");
    return 1;
  }

  const double half_width = 0.5 * o.cols, half_height = 0.5 * o.rows;
  const VolumeBox box{{-half_width, -half_width, -half_height},
                      {half_width, half_width, half_height}};
  std::vector<double> angles;
  for (int i = 0; i < o.projections; ++i)
    angles.push_back(M_PI * i / o.projections);
  std::printf("projecting the phantom (%d x %d, %d projections)...\n", o.rows, o.cols,
              o.projections);
  const std::vector<std::vector<float>> counts = phantom_counts(o, box, angles);

  TestAdapter adapter(server.tomop_data_address());
  adapter.set_shape(o.rows, o.cols);
  adapter.send(tomop::ScanSettings{0, 1, 1, false, true});
  adapter.send(tomop::GeometrySpecification{
      0,
      {static_cast<float>(-half_width), static_cast<float>(-half_width),
       static_cast<float>(-half_height)},
      {static_cast<float>(half_width), static_cast<float>(half_width),
       static_cast<float>(half_height)}});
  std::vector<float> angles_f(angles.begin(), angles.end());
  adapter.send(tomop::ParallelBeamGeometry{0, o.rows, o.cols, o.projections,
                                           tomop::FloatView::of(angles_f)});
  const std::vector<float> dark(static_cast<std::size_t>(o.rows) * o.cols, 100.0f);
  const std::vector<float> flat(dark.size(), 40100.0f);
  adapter.send(adapter.projection(0, 0, dark));
  adapter.send(adapter.projection(1, 0, flat));
  const Clock::time_point fill_start = Clock::now();
  for (int i = 0; i < o.projections; ++i)
    adapter.send(adapter.projection(2, i, counts[static_cast<std::size_t>(i)]));
  while (server.counters().at("tomop_packets") < adapter.sent())
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.wait_idle();
  const double fill_s = ms(Clock::now() - fill_start) / 1000;
  std::printf("window of %d projections filled in %.1f s\n", o.projections, fill_s);

  // Drags of the axial slice: RemoveSlice(old), SetSlice(new id) at another height.
  std::vector<double> drag_ms;
  std::int32_t axial = 2;
  next_image(viewer, axial, 0);
  for (int d = 0; d < o.drags; ++d) {
    const float z = -0.5f + static_cast<float>(d % 5) * 0.25f;
    const std::int32_t id = viewer.drag(axial, {2, 0, 0, 0, 2, 0, -1, -1, z});
    const Clock::time_point released = viewer.drag_released();
    const std::optional<Clock::time_point> arrived = next_image(viewer, id, 0);
    if (!arrived) {
      std::fprintf(stderr, "no SliceData for dragged slice %d\n", id);
      return 1;
    }
    drag_ms.push_back(ms(*arrived - released));
    axial = id;
  }

  // Single projections, paced so that the bridge's rate limit never holds one back.
  const double period_s = 1.0 / config.tomop.recast3d.rate_hz;
  std::vector<double> frame_ms;
  for (int f = 0; f < o.frames; ++f) {
    const std::uint64_t before = image_count(viewer, axial);
    const int id = o.projections + f;
    const Clock::time_point sent = Clock::now();
    adapter.send(adapter.projection(2, id, counts[static_cast<std::size_t>(id % o.projections)]));
    const std::optional<Clock::time_point> arrived = next_image(viewer, axial, before);
    if (!arrived) {
      std::fprintf(stderr, "no SliceData after projection %d\n", id);
      return 1;
    }
    frame_ms.push_back(ms(*arrived - sent));
    std::this_thread::sleep_for(std::chrono::duration<double>(1.5 * period_s));
  }
  {
    std::lock_guard<std::mutex> lock(viewer.mutex());
    if (!viewer.violations().empty()) {
      std::fprintf(stderr, "protocol violation: %s\n", viewer.violations().front().c_str());
      return 1;
    }
  }

  bench::Report report;
  const int slice = config.tomop.recast3d.slice_size;
  const std::string setup = std::to_string(o.rows) + "x" + std::to_string(o.cols) + ", " +
                            std::to_string(o.projections) + " projections, slice " +
                            std::to_string(slice) + "x" + std::to_string(slice);
  const auto add = [&](const char* what, const Stats& s) {
    report.add("recast3d")
        .set("measure", what)
        .set("setup", setup)
        .set("p50_ms", s.p50, 1)
        .set("p90_ms", s.p90, 1)
        .set("max_ms", s.max, 1)
        .set("n", s.n, 0);
  };
  add("drag: SetSlice -> SliceData", stats(drag_ms));
  add("projection -> SliceData", stats(frame_ms));
  report.note("backend", info.name + " on " + info.device);
  report.note("load_average", load_average());
  report.note("window_fill_s", std::to_string(fill_s));
  report.print("recast3d");
  std::printf("backend %s on %s, load average %s\n", info.name.c_str(), info.device.c_str(),
              load_average().c_str());
  if (!o.json.empty()) report.write_json(o.json, info.device);
  server.stop(false);
  return 0;
}

}  // namespace
}  // namespace slicestream

int main(int argc, char** argv) {
  slicestream::Options o;
  CLI::App app{"RECAST3D latencies: dragged slice and projection to SliceData at the viewer"};
  app.add_option("--backend", o.backend, "cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.add_option("--rows", o.rows, "detector rows (Tomobank: 2016)")->check(CLI::PositiveNumber);
  app.add_option("--cols", o.cols, "detector columns (Tomobank: 1800)")->check(CLI::PositiveNumber);
  app.add_option("--projections", o.projections, "projections per 180 degrees (Tomobank: 300)")
      ->check(CLI::PositiveNumber);
  app.add_option("--slice-size", o.slice_size, "slice edge in pixels (0: the detector width)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--drags", o.drags, "dragged slices measured")->check(CLI::PositiveNumber);
  app.add_option("--frames", o.frames, "single projections measured")->check(CLI::PositiveNumber);
  app.add_option("--json", o.json, "write the results as JSON");
  CLI11_PARSE(app, argc, argv);
  return slicestream::run(o);
}
