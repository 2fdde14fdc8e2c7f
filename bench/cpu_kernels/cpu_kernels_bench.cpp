// Throughput of the CPU kernels at the FleX-ray size (KernelKit paper, Table 1): a 400 x 600
// detector, three orthogonal 400 x 400 slices, 150 projections per rotation, 83 frames/s.
// Prints a table and, with --json FILE, writes the same numbers as JSON.
//
//   cpu_kernels_bench [--threads N] [--seconds S] [--json FILE]
//
// Every kernel runs once on one thread and once split over N threads (rows divided evenly), in
// the same run, so that ratios are measured side by side. Inputs are random, never zeros.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/median.hpp"
#include "kernels/cpu/backproject_cpu.hpp"
#include "kernels/cpu/preprocess_cpu.hpp"
#include "kernels/cpu/ramp_filter_cpu.hpp"
#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "kernels/projection_map.hpp"
#include "kernels/steady_clock.hpp"
#include "pipeline/backend/cpu/worker_pool.hpp"

namespace slicestream {
namespace {

constexpr double kPi = 3.14159265358979323846;

// The FleX-ray set-up of the benchmark.
constexpr DetectorShape kDetector{400, 600};
constexpr int kSliceSide = 400;
constexpr int kProjections = 150;
constexpr double kFrameRate = 83.0;

struct Measurement {
  std::string kernel;
  std::string unit;  // what `per_second` counts
  int threads = 1;
  double seconds_per_call = 0;      // wall clock, median
  double cpu_seconds_per_call = 0;  // CPU time of all threads, median
  double per_second = 0;            // items per wall-clock second
};

struct CallTime {
  double wall_seconds;  // median wall-clock time per call
  double cpu_seconds;   // median CPU time of the whole process per call (all threads)
};

// Repeats `call` for at least `min_seconds` (and 5 calls). CPU time is reported next to wall time
// because on a shared machine the wall time also counts waiting for a core.
CallTime time_per_call(double min_seconds, const std::function<void()>& call) {
  call();  // warm-up: caches, page faults, FFTW wisdom
  std::vector<double> wall, cpu;
  const auto start = SteadyClock::now();
  while (wall.size() < 5 || seconds_since(start) < min_seconds) {
    const std::clock_t c0 = std::clock();
    const auto t0 = SteadyClock::now();
    call();
    wall.push_back(seconds_since(t0));
    cpu.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
  }
  return {bench::median(wall), bench::median(cpu)};
}

std::vector<float> random_floats(std::mt19937& rng, std::size_t count, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(count);
  for (float& v : values)
    v = dist(rng);
  return values;
}

ScanGeometry flexray_geometry(BeamKind beam) {
  std::vector<double> angles(kProjections);
  for (int i = 0; i < kProjections; ++i)
    angles[static_cast<std::size_t>(i)] = 2 * kPi * i / kProjections;
  if (beam == BeamKind::kParallel) {
    return make_parallel_geometry(kDetector, {angles, 0.17, 0.17});
  }
  CircularConeParams p;
  p.angles_rad = angles;
  p.source_origin_mm = 400;
  p.origin_detector_mm = 300;
  p.pixel_width_mm = 0.3;
  p.pixel_height_mm = 0.3;
  return make_cone_geometry(kDetector, p);
}

// The box seen by every projection: 100 mm wide, 68 mm high at the axis.
VolumeBox flexray_box() {
  return {{-50, -50, -34}, {50, 50, 34}};
}

class Bench {
 public:
  Bench(int threads, double seconds)
      : threads_(threads),
        seconds_(seconds),
        rng_(12345),
        pool_(threads > 1 ? std::make_unique<WorkerPool>(threads - 1) : nullptr) {}

  void run() {
    preprocess();
    filter();
    for (BeamKind beam : {BeamKind::kCone, BeamKind::kParallel})
      backprojection(beam);
    sliding_window_update();
  }

  void print() const {
    std::printf("\n%-42s %7s %10s %10s %14s\n", "kernel", "threads", "wall ms", "cpu ms",
                "throughput (wall)");
    for (const Measurement& m : results_) {
      std::printf("%-42s %7d %10.3f %10.3f %14.4g %s/s\n", m.kernel.c_str(), m.threads,
                  1e3 * m.seconds_per_call, 1e3 * m.cpu_seconds_per_call, m.per_second,
                  m.unit.c_str());
    }
    std::printf(
        "\nFleX-ray sliding window, work per frame (preprocess + filter + 3 slices x 1 "
        "projection), target %.0f frames/s:\n",
        kFrameRate);
    for (int threads : thread_counts()) {
      const double frame = frame_seconds(threads);
      std::printf("  %d thread(s): %.2f ms per frame = %.0f frames/s\n", threads, 1e3 * frame,
                  1 / frame);
    }
  }

  void write_json(const std::string& path) const {
    std::ofstream out(path);
    out << "{\n  \"benchmark\": \"cpu_kernels\",\n  \"detector\": [" << kDetector.rows << ", "
        << kDetector.cols << "],\n  \"slice_side\": " << kSliceSide
        << ",\n  \"projections\": " << kProjections
        << ",\n  \"hardware_threads\": " << std::thread::hardware_concurrency()
        << ",\n  \"results\": [\n";
    for (std::size_t i = 0; i < results_.size(); ++i) {
      const Measurement& m = results_[i];
      out << "    {\"kernel\": \"" << m.kernel << "\", \"threads\": " << m.threads
          << ", \"seconds_per_call\": " << m.seconds_per_call
          << ", \"cpu_seconds_per_call\": " << m.cpu_seconds_per_call
          << ", \"per_second\": " << m.per_second << ", \"unit\": \"" << m.unit << "\"}"
          << (i + 1 < results_.size() ? ",\n" : "\n");
    }
    out << "  ],\n  \"frame_seconds_1_thread\": " << frame_seconds(1)
        << ",\n  \"frame_seconds_all_threads\": " << frame_seconds(threads_)
        << ",\n  \"threads\": " << threads_ << "\n}\n";
  }

 private:
  void record(const std::string& kernel, const std::string& unit, int threads, CallTime time,
              double items) {
    results_.push_back(
        {kernel, unit, threads, time.wall_seconds, time.cpu_seconds, items / time.wall_seconds});
    std::printf("  %-42s %2d threads %10.3f ms\n", kernel.c_str(), threads,
                1e3 * time.wall_seconds);
    std::fflush(stdout);
  }

  double seconds_of(const std::string& kernel, int threads) const {
    for (const Measurement& m : results_) {
      if (m.kernel == kernel && m.threads == threads) return m.seconds_per_call;
    }
    return 0;
  }

  // One frame of the streaming pipeline: the stages run on their own threads in the server, so
  // their work adds up on the cores.
  double frame_seconds(int threads) const {
    return seconds_of("preprocess uint16 cone", threads) + seconds_of("ramp filter", threads) +
           seconds_of("sliding window: 3 slices x 1 proj", threads);
  }

  void preprocess() {
    const std::size_t pixels = kDetector.pixels();
    std::uniform_int_distribution<int> counts(200, 60000);
    std::vector<std::uint16_t> raw(pixels);
    for (auto& v : raw)
      v = static_cast<std::uint16_t>(counts(rng_));
    const cpu::PreprocessTables tables = cpu::make_preprocess_tables(
        kDetector, random_floats(rng_, pixels, 90, 110), random_floats(rng_, pixels, 5e4f, 6e4f));
    const ScanGeometry geometry = flexray_geometry(BeamKind::kCone);
    const CosineWeight cosine = make_cosine_weight(BeamKind::kCone, geometry.vectors[7], kDetector);
    std::vector<float> out(pixels);
    const FrameView frame{raw.data(), PixelType::kUint16, kDetector};
    for (int threads : thread_counts()) {
      const CallTime s = time_per_call(seconds_, [&] {
        run(threads, kDetector.rows, [&](int, int begin, int end) {
          PreprocessCounters counters;
          cpu::preprocess_rows(frame, tables, PreprocessParams{}, cosine, out.data(), begin, end,
                               &counters);
        });
      });
      record("preprocess uint16 cone", "pixels", threads, s, static_cast<double>(pixels));
    }
  }

  void filter() {
    const std::vector<float> input = random_floats(rng_, kDetector.pixels(), 0, 3);
    std::vector<float> projection(input.size());
    const std::size_t row_floats = static_cast<std::size_t>(kDetector.cols);
    for (int threads : thread_counts()) {
      cpu::RampFilter ramp(kDetector, FilterConfig{}, threads);
      const CallTime s = time_per_call(seconds_, [&] {
        run(threads, kDetector.rows, [&](int worker, int begin, int end) {
          // Fresh input every call: filtering the same buffer again and again would drive its
          // values into denormals and time those instead.
          std::copy(input.begin() + static_cast<std::ptrdiff_t>(row_floats * begin),
                    input.begin() + static_cast<std::ptrdiff_t>(row_floats * end),
                    projection.begin() + static_cast<std::ptrdiff_t>(row_floats * begin));
          ramp.filter_rows(projection.data(), begin, end, worker);
        });
      });
      record("ramp filter", "rows", threads, s, kDetector.rows);
    }
  }

  void backprojection(BeamKind beam) {
    const ScanGeometry geometry = flexray_geometry(beam);
    const std::vector<ProjectionMap> maps = make_projection_maps(geometry);
    std::vector<std::vector<float>> data;
    std::vector<cpu::ProjectionRef> refs;
    for (int p = 0; p < kProjections; ++p) {
      data.push_back(random_floats(rng_, kDetector.pixels(), -1, 1));
    }
    for (int p = 0; p < kProjections; ++p) {
      refs.push_back({data[static_cast<std::size_t>(p)].data(), maps[static_cast<std::size_t>(p)]});
    }
    const auto slices = default_slices(flexray_box());
    const std::string name =
        std::string("backproject ") + to_string(beam) + ": 3 slices x 150 proj";
    std::vector<float> target(static_cast<std::size_t>(kSliceSide) * kSliceSide);
    for (int threads : thread_counts()) {
      const CallTime s = time_per_call(seconds_, [&] {
        for (const SliceOrientation& slice : slices) {
          const GridSpec grid = slice_grid(slice, kSliceSide, kSliceSide);
          run(threads, kSliceSide, [&](int, int begin, int end) {
            cpu::backproject_rows(grid, kDetector, refs.data(), kProjections, 1.0f, target.data(),
                                  0, begin, end);
          });
        }
      });
      record(name, "updates", threads, s, 3.0 * kSliceSide * kSliceSide * kProjections);
    }
  }

  // The per-frame work of the sliding window: one (new - old) projection into three slices.
  void sliding_window_update() {
    const ScanGeometry geometry = flexray_geometry(BeamKind::kCone);
    const std::vector<float> difference = random_floats(rng_, kDetector.pixels(), -1, 1);
    const cpu::ProjectionRef ref{
        difference.data(), make_projection_map(BeamKind::kCone, geometry.vectors[11], kDetector)};
    const auto slices = default_slices(flexray_box());
    std::vector<float> target(static_cast<std::size_t>(kSliceSide) * kSliceSide);
    for (int threads : thread_counts()) {
      const CallTime s = time_per_call(seconds_, [&] {
        for (const SliceOrientation& slice : slices) {
          const GridSpec grid = slice_grid(slice, kSliceSide, kSliceSide);
          run(threads, kSliceSide, [&](int, int begin, int end) {
            cpu::backproject_rows(grid, kDetector, &ref, 1, 1.0f, target.data(), 0, begin, end);
          });
        }
      });
      record("sliding window: 3 slices x 1 proj", "updates", threads, s,
             3.0 * kSliceSide * kSliceSide);
    }
  }

  // body(participant, begin, end) on `threads` contiguous parts of [0, count), the calling thread
  // taking part: the server's backend splits rows over its WorkerPool the same way.
  void run(int threads, int count, const std::function<void(int, int, int)>& body) {
    InlineExecutor one_thread;
    Executor& executor = threads > 1 ? static_cast<Executor&>(*pool_) : one_thread;
    const auto grain = static_cast<std::size_t>((count + threads - 1) / threads);
    executor.parallel_for(static_cast<std::size_t>(count), grain,
                          [&](std::size_t begin, std::size_t end, int participant) {
                            body(participant, static_cast<int>(begin), static_cast<int>(end));
                          });
  }

  std::vector<int> thread_counts() const {
    return threads_ == 1 ? std::vector<int>{1} : std::vector<int>{1, threads_};
  }

  int threads_;
  double seconds_;
  std::mt19937 rng_;
  std::unique_ptr<WorkerPool> pool_;  // threads_ - 1 workers beside the calling thread
  std::vector<Measurement> results_;
};

}  // namespace
}  // namespace slicestream

int main(int argc, char** argv) {
  CLI::App app{"Throughput of the CPU kernels at the FleX-ray size"};
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double seconds = 1.0;
  std::string json;
  app.add_option("--threads", threads, "threads for the parallel runs")->check(CLI::Range(1, 1024));
  app.add_option("--seconds", seconds, "minimum measuring time per case")
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--json", json, "write the results as JSON to this file");
  CLI11_PARSE(app, argc, argv);

  slicestream::Bench bench(threads, seconds);
  bench.run();
  bench.print();
  if (!json.empty()) bench.write_json(json);
  return 0;
}
