#include "backend_sequence.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/common/median.hpp"
#include "kernels/steady_clock.hpp"
#include "pipeline/backend/cuda/cuda_backend.hpp"

namespace slicestream::bench {
namespace {

double us_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

struct Variant {
  bool graphs;
  cuda::BackprojectInterpolation interpolation;
  int batch;
  bool crop_in_store_update = true;  // false: the filter crops in a pass of its own
};

// The preprocess stage reads the guard counts of this many frames back at once.
constexpr int kCountsBatch = 8;

struct StageTimes {
  double preprocess_us = 0;
  double filter_us = 0;
  double replace_us = 0;
};

}  // namespace

void backend_sequence(const SetupSpec& spec, int frames, Report& report) {
  const DetectorShape detector = spec.detector;
  ScanSetup setup;
  setup.geometry = setup_geometry(spec, BeamKind::kCone);
  setup.pixel_type = PixelType::kUint16;
  setup.filter = {FilterWindow::kSheppLogan, 1.0f};
  setup.projections_in_flight = 2 * kMaxBenchBatch;
  setup.max_projection_batch = kMaxBenchBatch;
  const int window = static_cast<int>(setup.geometry.vectors.size());
  const float scale = angular_weight(window);
  const std::vector<ProjectionMap> maps = make_projection_maps(setup.geometry);
  // Eight different raw frames, cycled: counts between dark and flat.
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> counts(500, 18000);
  std::vector<std::vector<std::uint16_t>> raw(8, std::vector<std::uint16_t>(detector.pixels()));
  for (auto& frame : raw) {
    for (std::uint16_t& v : frame)
      v = static_cast<std::uint16_t>(counts(rng));
  }
  const std::vector<float> dark(detector.pixels(), 100.0f);
  const std::vector<float> flat(detector.pixels(), 20000.0f);

  const auto texture = cuda::BackprojectInterpolation::kTexture;
  const auto exact = cuda::BackprojectInterpolation::kExact;
  const Variant variants[] = {{false, texture, 1},       {true, texture, 1},       {true, exact, 1},
                              {false, texture, 8},       {true, texture, 8},       {true, exact, 8},
                              {true, texture, 1, false}, {true, texture, 8, false}};
  for (const Variant& v : variants) {
    CudaBackendOptions options;
    options.use_graphs = v.graphs;
    options.tuning.interpolation = v.interpolation;
    options.crop_in_store_update = v.crop_in_store_update;
    CudaBackend backend(0, options);
    backend.begin_scan(setup);
    backend.set_calibration(dark, flat);
    std::vector<std::unique_ptr<ReconTarget>> slices;
    std::vector<ReconTarget*> live;
    for (const GridSpec& grid : setup_slices(spec)) {
      slices.push_back(backend.create_target(grid));
      live.push_back(slices.back().get());
    }
    std::vector<ProjectionUpdate> pending;
    // One frame as the pipeline's stages handle it, on this one thread; store updates are
    // handed over in batches of v.batch, guard counts read back every kCountsBatch frames.
    auto frame = [&](int f, StageTimes* times) {
      const int slot = f % window;
      const FrameView view{raw[static_cast<std::size_t>(f) % raw.size()].data(), PixelType::kUint16,
                           detector};
      const SteadyClock::time_point t0 = SteadyClock::now();
      std::unique_ptr<ProjectionBuffer> projection =
          backend.preprocess(view, setup.geometry.vectors[static_cast<std::size_t>(slot)]);
      if (f % kCountsBatch == kCountsBatch - 1) (void)backend.take_preprocess_counts();
      const SteadyClock::time_point t1 = SteadyClock::now();
      backend.filter(*projection);
      const SteadyClock::time_point t2 = SteadyClock::now();
      ProjectionUpdate update;
      update.slot = slot;
      update.map = maps[static_cast<std::size_t>(slot)];
      update.projection = std::move(projection);
      update.live = live;
      pending.push_back(std::move(update));
      if (static_cast<int>(pending.size()) >= v.batch) {
        backend.replace_projections(pending, scale);
        pending.clear();
      }
      const SteadyClock::time_point t3 = SteadyClock::now();
      if (times != nullptr) {
        times->preprocess_us += us_between(t0, t1);
        times->filter_us += us_between(t1, t2);
        times->replace_us += us_between(t2, t3);
      }
    };
    auto flush = [&] {
      if (!pending.empty()) backend.replace_projections(pending, scale);
      pending.clear();
    };

    // Warm-up: two rotations fill the store (the difference path) and capture the graphs.
    int f = 0;
    for (; f < 2 * window; ++f)
      frame(f, nullptr);
    flush();
    backend.synchronize();
    const CudaBackend::GraphCounts warm = backend.graph_captures();

    // Throughput: frames back to back, one synchronisation at the end.
    StageTimes times;
    const SteadyClock::time_point begin = SteadyClock::now();
    for (int k = 0; k < frames; ++k, ++f)
      frame(f, &times);
    flush();
    backend.synchronize();
    const double wall_us = us_between(begin, SteadyClock::now()) / frames;
    const CudaBackend::GraphCounts after = backend.graph_captures();
    const auto recaptures =
        static_cast<double>((after.preprocess - warm.preprocess) + (after.filter - warm.filter) +
                            (after.reconstruct - warm.reconstruct));

    // Latency: one frame at a time, waiting for the GPU after each (batch 1 only).
    double latency_us = 0;
    if (v.batch == 1) {
      std::vector<double> samples;
      for (int k = 0; k < 40; ++k, ++f) {
        const SteadyClock::time_point t0 = SteadyClock::now();
        frame(f, nullptr);
        backend.synchronize();
        samples.push_back(us_between(t0, SteadyClock::now()));
      }
      latency_us = median(std::move(samples));
    }
    backend.end_scan();

    report.add("backend per-frame sequence")
        .set("setup", spec.name)
        .set("graphs", v.graphs ? "on" : "off")
        .set("interpolation", cuda::to_string(v.interpolation))
        .set("batch", static_cast<double>(v.batch))
        .set("filter crop", v.crop_in_store_update ? "in the store update" : "own pass")
        .set("frames", static_cast<double>(frames))
        .set("wall us per frame", wall_us)
        .set("preprocess host us", times.preprocess_us / frames)
        .set("filter host us", times.filter_us / frames)
        .set("replace host us", times.replace_us / frames)
        .set("latency us (synchronized, median)", latency_us)
        .set("graphs captured in warm-up",
             static_cast<double>(warm.preprocess + warm.filter + warm.reconstruct))
        .set("re-captures while timed", recaptures)
        .set("refused graph updates", static_cast<double>(after.update_failures));
  }
}

}  // namespace slicestream::bench
