// The CUDA backend against the CPU backend: the same sequence of calls (calibration, frames of
// the analytic phantom through preprocess, filter and replace_projection with live, accumulate
// and preview targets, a centre-of-rotation change, full recomputes) must give the same targets
// to 1e-5; the incremental targets must equal a full recompute; errors are BackendErrors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "pipeline/backend/cuda/cuda_backend.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream {
namespace {

using test::RandomSource;

struct Targets {
  std::vector<std::unique_ptr<ReconTarget>> live;
  std::unique_ptr<ReconTarget> accumulate;
  std::unique_ptr<ReconTarget> preview;
  std::unique_ptr<ReconTarget> recompute;
};

Targets make_targets(Backend& backend, const VolumeBox& box) {
  Targets t;
  const auto slices = default_slices(box);
  t.live.push_back(backend.create_target(slice_grid(slices[0], 37, 29)));
  t.live.push_back(backend.create_target(slice_grid(slices[1], 40, 40)));
  t.live.push_back(backend.create_target(slice_grid(slices[2], 33, 45)));
  t.accumulate = backend.create_target(slice_grid(slices[2], 21, 19));
  t.preview = backend.create_target(volume_grid(box, 11, 10, 9));
  t.recompute = backend.create_target(slice_grid(slices[1], 40, 40));
  return t;
}

std::vector<ReconTarget*> live_of(const Targets& t) {
  std::vector<ReconTarget*> live;
  for (const auto& target : t.live)
    live.push_back(target.get());
  live.push_back(t.preview.get());
  return live;
}

std::vector<float> read(Backend& backend, const ReconTarget& target) {
  std::vector<float> values(target.grid().points());
  backend.read_target(target, values.data());
  return values;
}

// uint16 counts of a phantom projection: dark + gain * exp(-line integral) + noise.
std::vector<std::uint16_t> phantom_frame(RandomSource& random,
                                         const std::vector<phantom::Ellipsoid>& object,
                                         const ScanGeometry& geometry, int slot) {
  const DetectorShape shape = geometry.detector;
  std::vector<float> integrals(shape.pixels());
  phantom::project(object, geometry.beam, geometry.vectors[static_cast<std::size_t>(slot)], shape,
                   integrals.data());
  std::vector<std::uint16_t> raw(shape.pixels());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const double counts = 100.0 + 20000.0 * std::exp(-integrals[i]) + random.uniform(-20, 20);
    raw[i] = static_cast<std::uint16_t>(std::clamp(counts, 0.0, 65535.0));
  }
  raw.at(7) = 0;  // a guard case: transmission <= 0
  return raw;
}

void expect_same(Backend& cpu, Backend& gpu, const ReconTarget& a, const ReconTarget& b,
                 const std::string& what) {
  const std::vector<float> expected = read(cpu, a);
  const std::vector<float> actual = read(gpu, b);
  ASSERT_GT(test::max_abs(expected), 0.0) << what;
  EXPECT_LE(test::relative_error(actual, expected), 1e-5) << what;
}

// The CUDA backend variants the tests run side by side with the CPU backend.
struct Variant {
  const char* name;
  CudaBackendOptions options;
};

std::vector<Variant> variants() {
  CudaBackendOptions eager;  // the steps enqueued one by one, texture layers always written
  eager.use_graphs = false;
  eager.skip_unused_texture_writes = false;
  CudaBackendOptions graphs;  // the defaults: graphs, layers skipped on the exact path
  return {{"step by step", eager}, {"graphs", graphs}};
}

// A circular scan of uint16 frames of the phantom in a 20 mm box.
struct PhantomScan {
  ScanSetup setup;
  VolumeBox box = test::centered_box(20.0);
  int window = 0;
  float scale = 0;  // angular weight of the window
};

PhantomScan phantom_scan(BeamKind beam, DetectorShape detector, int window, FilterConfig filter,
                         std::size_t in_flight) {
  PhantomScan scan;
  scan.setup.geometry = test::circular_geometry(beam, detector, window);
  scan.setup.pixel_type = PixelType::kUint16;
  scan.setup.filter = filter;
  scan.setup.projections_in_flight = in_flight;
  scan.window = window;
  scan.scale = angular_weight(window);
  return scan;
}

void run_same_sequence(BeamKind beam) {
  const PhantomScan scan = phantom_scan(beam, {40, 64}, 24, {FilterWindow::kSheppLogan, 0.9f}, 4);
  const ScanSetup& setup = scan.setup;
  const DetectorShape detector = setup.geometry.detector;
  const int window = scan.window;
  const VolumeBox box = scan.box;
  const float scale = scan.scale;
  RandomSource random;
  SCOPED_TRACE(random.trace());
  std::vector<float> dark = random.floats(detector.pixels(), 95.0, 105.0);
  std::vector<float> flat = random.floats(detector.pixels(), 20050.0, 20150.0);

  // backends[0] is the CPU backend, the others are CUDA variants.
  CpuBackend cpu(CpuBackendOptions{2, 0});
  std::vector<std::unique_ptr<CudaBackend>> gpus;
  std::vector<Backend*> backends = {&cpu};
  for (const Variant& v : variants()) {
    gpus.push_back(std::make_unique<CudaBackend>(0, v.options));
    backends.push_back(gpus.back().get());
  }
  const std::size_t count = backends.size();
  EXPECT_EQ(gpus[0]->info().name, "cuda");
  std::vector<Targets> targets(count);
  for (std::size_t b = 0; b < count; ++b) {
    backends[b]->begin_scan(setup);
    backends[b]->set_calibration(dark, flat);
    targets[b] = make_targets(*backends[b], box);
  }
  EXPECT_GT(gpus[0]->info().memory_used_by_scan_bytes, detector.pixels() * window * sizeof(float));
  EXPECT_TRUE(gpus[0]->texture_layer_writes());
  EXPECT_FALSE(gpus[1]->texture_layer_writes());  // exact path: layers skipped

  // Every CUDA variant against the CPU backend, and the variants against each other (graph
  // replay runs the same kernels on the same data as the step-by-step path).
  auto expect_all_same = [&](auto member, const std::string& what) {
    for (std::size_t b = 1; b < count; ++b) {
      expect_same(cpu, *backends[b], *member(targets[0]), *member(targets[b]),
                  what + " (" + variants()[b - 1].name + ")");
    }
    EXPECT_LE(test::relative_error(read(*backends[2], *member(targets[2])),
                                   read(*backends[1], *member(targets[1]))),
              1e-6)
        << what << ": graphs vs step by step";
  };

  // Two rotations of a phantom that moves between them (the second rotation's updates are real
  // differences), then a centre-of-rotation change, then frames taken with the new maps.
  auto object = phantom::shepp_logan_3d(box, 0.02);
  std::vector<ProjectionMap> maps = make_projection_maps(setup.geometry);
  auto feed = [&](int frame) {
    const int slot = frame % window;
    const std::vector<std::uint16_t> raw = phantom_frame(random, object, setup.geometry, slot);
    const FrameView view{raw.data(), PixelType::kUint16, detector};
    std::vector<PreprocessCounters> counts(count);
    for (std::size_t b = 0; b < count; ++b) {
      auto projection = backends[b]->preprocess(
          view, setup.geometry.vectors[static_cast<std::size_t>(slot)], &counts[b]);
      backends[b]->filter(*projection);
      backends[b]->replace_projection(slot, maps[static_cast<std::size_t>(slot)],
                                      std::move(projection), live_of(targets[b]),
                                      {targets[b].accumulate.get()}, scale);
    }
    for (std::size_t b = 1; b < count; ++b) {
      EXPECT_EQ(counts[0].clamped_low, counts[b].clamped_low);
      EXPECT_EQ(counts[0].non_finite, counts[b].non_finite);
    }
  };
  int frame = 0;
  for (; frame < window; ++frame)
    feed(frame);
  for (auto& e : object)
    e.center_mm.x += 0.8;
  for (; frame < 2 * window; ++frame) {
    feed(frame);
    if (frame % 8 == 0) {
      for (std::size_t s = 0; s < 3; ++s) {
        expect_all_same(
            [s](Targets& t) { return t.live[s].get(); },
            "live slice " + std::to_string(s) + " after frame " + std::to_string(frame));
      }
    }
  }
  expect_all_same([](Targets& t) { return t.preview.get(); }, "preview");
  expect_all_same([](Targets& t) { return t.accumulate.get(); }, "accumulate target");

  // Incremental = full recompute (on each backend).
  std::vector<int> all_slots;
  for (int s = 0; s < window; ++s)
    all_slots.push_back(s);
  for (std::size_t b = 0; b < count; ++b) {
    backends[b]->backproject_store(all_slots, *targets[b].recompute, scale, false, 0, 1);
    EXPECT_LE(test::relative_error(read(*backends[b], *targets[b].live[1]),
                                   read(*backends[b], *targets[b].recompute)),
              1e-5)
        << backends[b]->info().name << " " << b << ": incremental vs full recompute";
  }
  expect_all_same([](Targets& t) { return t.recompute.get(); }, "full recompute");

  // Centre of rotation moves: stored data stay, maps change; the live slices are recomputed, and
  // frames arriving with yet other maps take the two-source path (+BP(new) - BP(old)).
  const ScanGeometry shifted = with_rotation_axis_offset(setup.geometry, 0.7);
  const std::vector<ProjectionMap> shifted_maps = make_projection_maps(shifted);
  for (std::size_t b = 0; b < count; ++b) {
    backends[b]->set_slot_maps(shifted_maps);
    for (const auto& t : targets[b].live) {
      backends[b]->backproject_store(all_slots, *t, scale, false, 0, t->grid().depth);
    }
    backends[b]->backproject_store(all_slots, *targets[b].preview, scale, false, 0, 4);
    backends[b]->backproject_store(all_slots, *targets[b].preview, scale, false, 4, 9);
  }
  maps = make_projection_maps(with_rotation_axis_offset(setup.geometry, -0.4));
  for (int end = frame + 10; frame < end; ++frame)
    feed(frame);
  for (std::size_t s = 0; s < 3; ++s) {
    expect_all_same([s](Targets& t) { return t.live[s].get(); },
                    "live slice " + std::to_string(s) + " after the map change");
  }
  expect_all_same([](Targets& t) { return t.preview.get(); }, "preview after the map change");

  // copy_target and clear_target.
  for (std::size_t b = 0; b < count; ++b) {
    backends[b]->copy_target(*targets[b].live[1], *targets[b].recompute);
    backends[b]->clear_target(*targets[b].live[0]);
  }
  expect_all_same([](Targets& t) { return t.recompute.get(); }, "copied target");
  EXPECT_EQ(test::max_abs(read(*gpus[1], *targets[2].live[0])), 0.0);

  // A stream of frames of one shape captures one graph per stage (the reconstruct stage one per
  // parameter-block size: small, and the two-source path's).
  const CudaBackend::GraphCounts graphs = gpus[1]->graph_captures();
  EXPECT_EQ(graphs.preprocess, 1u);
  EXPECT_EQ(graphs.filter, 1u);
  EXPECT_GE(graphs.reconstruct, 1u);
  EXPECT_LE(graphs.reconstruct, 2u);
  EXPECT_EQ(graphs.update_failures, 0u);
  const CudaBackend::GraphCounts none = gpus[0]->graph_captures();
  EXPECT_EQ(none.preprocess + none.filter + none.reconstruct, 0u);
  for (std::size_t b = 0; b < count; ++b)
    backends[b]->end_scan();
}

TEST(CudaBackend, SameCallsAsCpuBackendGiveSameTargetsCone) {
  SLICESTREAM_REQUIRE_GPU();
  run_same_sequence(BeamKind::kCone);
}

TEST(CudaBackend, SameCallsAsCpuBackendGiveSameTargetsParallel) {
  SLICESTREAM_REQUIRE_GPU();
  run_same_sequence(BeamKind::kParallel);
}

// Batched updates (replace_projections) on the GPU against the same updates one by one on the
// CPU backend: batches longer than max_batch, repeated slots inside a batch, live, shadow
// (accumulate, then live) and preview targets, maps that change; an odd detector and odd grids.
void run_batched(BeamKind beam, bool graphs) {
  // An odd detector; 16 projections in flight: a whole batch is filtered before it is stored.
  const PhantomScan scan = phantom_scan(beam, {37, 53}, 15, {FilterWindow::kHamming, 0.85f}, 16);
  ScanSetup setup = scan.setup;
  setup.max_projection_batch = 4;  // batches below are longer: split into runs of at most 4
  const float scale = scan.scale;
  RandomSource random;
  SCOPED_TRACE(random.trace());
  CpuBackend cpu(CpuBackendOptions{2, 0});
  CudaBackendOptions options;
  options.use_graphs = graphs;
  CudaBackend gpu(0, options);
  Backend* backends[2] = {&cpu, &gpu};
  Targets targets[2];
  std::unique_ptr<ReconTarget> shadow[2];
  for (int b = 0; b < 2; ++b) {
    backends[b]->begin_scan(setup);
    targets[b] = make_targets(*backends[b], scan.box);
    shadow[b] = backends[b]->create_target(slice_grid(default_slices(scan.box)[1], 31, 27));
  }
  auto object = phantom::shepp_logan_3d(scan.box, 0.02);
  const std::vector<ProjectionMap> maps = make_projection_maps(setup.geometry);
  const std::vector<ProjectionMap> moved =
      make_projection_maps(with_rotation_axis_offset(setup.geometry, 0.45));
  const std::vector<std::vector<int>> batches = {
      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14},  // fills the window
      {3, 7, 3, 9, 11},                                    // a repeated slot
      {0},
      {14, 2, 5, 8, 1, 6, 2, 13, 10},
      {4, 12, 4, 4}};
  std::vector<bool> covered(static_cast<std::size_t>(scan.window), false);
  int frame = 0;
  for (const std::vector<int>& slots : batches) {
    std::vector<ProjectionUpdate> updates;
    for (int slot : slots) {
      const std::vector<std::uint16_t> raw = phantom_frame(random, object, setup.geometry, slot);
      const FrameView view{raw.data(), PixelType::kUint16, setup.geometry.detector};
      // Every third frame is taken with other maps (the two-source path on the live targets).
      const ProjectionMap& map = (frame % 3 == 2 ? moved : maps)[static_cast<std::size_t>(slot)];
      std::vector<bool>::reference seen = covered[static_cast<std::size_t>(slot)];
      for (int b = 0; b < 2; ++b) {
        auto projection = backends[b]->preprocess(
            view, setup.geometry.vectors[static_cast<std::size_t>(slot)], nullptr);
        backends[b]->filter(*projection);
        std::vector<ReconTarget*> live = live_of(targets[b]);
        std::vector<ReconTarget*> accumulate = {targets[b].accumulate.get()};
        // The shadow as the reconstructor drives it: accumulate a slot's first frame, then live.
        (seen ? live : accumulate).push_back(shadow[b].get());
        if (b == 0) {
          backends[b]->replace_projection(slot, map, std::move(projection), live, accumulate,
                                          scale);
        } else {
          ProjectionUpdate u;
          u.slot = slot;
          u.map = map;
          u.projection = std::move(projection);
          u.live = live;
          u.accumulate = accumulate;
          updates.push_back(std::move(u));
        }
      }
      seen = true;
      ++frame;
    }
    gpu.replace_projections(updates, scale);
    for (const ProjectionUpdate& u : updates)
      EXPECT_TRUE(u.applied);
    for (std::size_t s = 0; s < 3; ++s) {
      expect_same(cpu, gpu, *targets[0].live[s], *targets[1].live[s],
                  "live slice " + std::to_string(s) + " after frame " + std::to_string(frame));
    }
    expect_same(cpu, gpu, *shadow[0], *shadow[1], "shadow after frame " + std::to_string(frame));
  }
  expect_same(cpu, gpu, *targets[0].preview, *targets[1].preview, "preview");
  expect_same(cpu, gpu, *targets[0].accumulate, *targets[1].accumulate, "accumulate target");
  // The store: a full recompute from it matches too, and equals the incremental slice.
  std::vector<int> all_slots;
  for (int s = 0; s < scan.window; ++s)
    all_slots.push_back(s);
  for (int b = 0; b < 2; ++b) {
    backends[b]->backproject_store(all_slots, *targets[b].recompute, scale, false, 0, 1);
  }
  expect_same(cpu, gpu, *targets[0].recompute, *targets[1].recompute, "full recompute");
  EXPECT_LE(test::relative_error(read(gpu, *targets[1].live[1]), read(gpu, *targets[1].recompute)),
            1e-5);
}

TEST(CudaBackend, BatchedUpdatesEqualOneByOneOnTheCpuCone) {
  SLICESTREAM_REQUIRE_GPU();
  run_batched(BeamKind::kCone, /*graphs=*/true);
}

TEST(CudaBackend, BatchedUpdatesEqualOneByOneOnTheCpuParallelStepByStep) {
  SLICESTREAM_REQUIRE_GPU();
  run_batched(BeamKind::kParallel, /*graphs=*/false);
}

// The texture layers are skipped on the exact path; choosing a hardware-filtering path brings
// them up to date from the linear copy (else it would read stale layers), keeps them written,
// and going back to the exact path skips them again.
TEST(CudaBackend, TextureLayersFollowTheInterpolationPath) {
  SLICESTREAM_REQUIRE_GPU();
  const PhantomScan scan =
      phantom_scan(BeamKind::kCone, {33, 47}, 12, {FilterWindow::kRamLak, 1.0f}, 4);
  const ScanSetup& setup = scan.setup;
  const DetectorShape detector = setup.geometry.detector;
  const int window = scan.window;
  const VolumeBox box = scan.box;
  RandomSource random;
  SCOPED_TRACE(random.trace());
  CpuBackend cpu(CpuBackendOptions{2, 0});
  CudaBackend gpu(0);
  Backend* backends[2] = {&cpu, &gpu};
  std::unique_ptr<ReconTarget> live[2];
  std::unique_ptr<ReconTarget> full[2];
  const GridSpec grid = slice_grid(default_slices(box)[0], 29, 35);
  for (int b = 0; b < 2; ++b) {
    backends[b]->begin_scan(setup);
    live[b] = backends[b]->create_target(grid);
    full[b] = backends[b]->create_target(grid);
  }
  ASSERT_FALSE(gpu.texture_layer_writes());
  const float scale = scan.scale;
  auto object = phantom::shepp_logan_3d(box, 0.02);
  const std::vector<ProjectionMap> maps = make_projection_maps(setup.geometry);
  std::vector<int> all_slots;
  for (int s = 0; s < window; ++s)
    all_slots.push_back(s);
  auto feed = [&](int first, int count) {
    for (int f = first; f < first + count; ++f) {
      const int slot = f % window;
      const std::vector<std::uint16_t> raw = phantom_frame(random, object, setup.geometry, slot);
      const FrameView view{raw.data(), PixelType::kUint16, detector};
      for (int b = 0; b < 2; ++b) {
        auto p = backends[b]->preprocess(
            view, setup.geometry.vectors[static_cast<std::size_t>(slot)], nullptr);
        backends[b]->filter(*p);
        backends[b]->replace_projection(slot, maps[static_cast<std::size_t>(slot)], std::move(p),
                                        {live[b].get()}, {}, scale);
      }
    }
  };
  auto recompute_and_compare = [&](double tolerance, const std::string& what) {
    for (int b = 0; b < 2; ++b)
      backends[b]->backproject_store(all_slots, *full[b], scale, false, 0, 1);
    const std::vector<float> expected = read(cpu, *full[0]);
    ASSERT_GT(test::max_abs(expected), 0.0);
    EXPECT_LE(test::relative_error(read(gpu, *full[1]), expected), tolerance) << what;
  };
  feed(0, window + 5);
  recompute_and_compare(1e-5, "exact path, layers skipped");
  // Hardware filtering (8-bit weights): ~3e-4 against the CPU twin; stale layers would be far off.
  gpu.set_backproject_tuning({32, 4, 0, cuda::BackprojectInterpolation::kTextureLinear, false});
  EXPECT_TRUE(gpu.texture_layer_writes());
  recompute_and_compare(3e-3, "hardware filtering after the layers came back");
  feed(window + 5, 7);  // the texture path's updates write the layers
  recompute_and_compare(3e-3, "hardware filtering after more frames");
  EXPECT_LE(test::relative_error(read(gpu, *live[1]), read(cpu, *live[0])), 3e-3);
  gpu.set_backproject_tuning({32, 4, 0, cuda::BackprojectInterpolation::kLinearMemory, false});
  EXPECT_FALSE(gpu.texture_layer_writes());
  feed(window + 12, 9);
  recompute_and_compare(1e-5, "exact path again");
}

// The whole pipeline on the GPU (stage threads on three streams, each capturing its graphs while
// the others run; queued frames batched) against the same pipeline on the CPU backend, with a
// refresh shadow in every rotation: the same slices, and each equal to a full recompute.
TEST(CudaBackend, ThePipelineOnTheGpuMatchesTheCpuPipeline) {
  SLICESTREAM_REQUIRE_GPU();
  const test::TestScan scan = test::make_cone_scan(3, {24, 40}, 30, 60.0, 60.0);
  const auto n = static_cast<std::uint32_t>(scan.description.projections_per_rotation());
  const SetSliceCommand axial = test::axial_slice(scan.description, 1, 33);
  const SetSliceCommand oblique = test::oblique_slice(scan.description, 2, 27);
  std::vector<std::vector<float>> last[2];
  for (int b = 0; b < 2; ++b) {
    SCOPED_TRACE(b == 0 ? "cpu" : "cuda");
    test::RecordingSink sink;
    PipelineConfig config = test::small_config();
    config.refresh_rotations = 1;
    config.max_projection_batch = 8;
    std::unique_ptr<Backend> backend;
    if (b == 0) {
      backend = test::cpu_backend();
    } else {
      backend = std::make_unique<CudaBackend>(0);
    }
    Pipeline pipeline(config, std::move(backend), sink);
    pipeline.start();
    for (const SetSliceCommand& slice : {axial, oblique}) {
      ASSERT_TRUE(test::call(pipeline, slice).status.ok());
    }
    test::begin_scan(pipeline, scan);
    test::feed_phantom(pipeline, scan, 0, 3 * n + 7);
    pipeline.wait_idle();
    const MetricsSnapshot m = pipeline.metrics();
    EXPECT_EQ(m.projections_integrated, 3 * n + 7);
    EXPECT_EQ(m.errors, 0u);
    EXPECT_TRUE(m.discards.empty());
    for (const SetSliceCommand& slice : {axial, oblique}) {
      const std::optional<SliceImage> published = sink.last_slice(slice.slice_id);
      ASSERT_TRUE(published.has_value());
      EXPECT_EQ(published->projections_integrated, 3 * n + 7);
      const CommandReply full =
          test::call(pipeline, GetSliceCommand{slice.orientation, slice.width, slice.height});
      ASSERT_TRUE(full.slice.has_value());
      ASSERT_GT(test::max_abs(full.slice->values), 0.0);
      EXPECT_LE(test::relative_error(published->values, full.slice->values), 1e-5)
          << "slice " << slice.slice_id << ": incremental vs full recompute";
      last[b].push_back(published->values);
    }
  }
  for (std::size_t s = 0; s < last[0].size(); ++s) {
    EXPECT_LE(test::relative_error(last[1][s], last[0][s]), 1e-5)
        << "slice " << s << ": GPU vs CPU";
  }
}

TEST(CudaBackend, ScanThatDoesNotFitIsAClearError) {
  SLICESTREAM_REQUIRE_GPU();
  CudaBackend gpu(0);
  ScanSetup setup;
  setup.geometry = test::circular_geometry(BeamKind::kParallel, {2048, 2048}, 20000);
  try {
    gpu.begin_scan(setup);
    FAIL() << "a 320 GB window was accepted";
  } catch (const BackendError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("does not fit"), std::string::npos) << message;
    EXPECT_NE(message.find("projection store 20000 x 2048 x 2048"), std::string::npos) << message;
  }
  // The backend stays usable.
  setup.geometry = test::circular_geometry(BeamKind::kParallel, {8, 8}, 4);
  EXPECT_NO_THROW(gpu.begin_scan(setup));
}

TEST(CudaBackend, MisuseIsABackendError) {
  SLICESTREAM_REQUIRE_GPU();
  CudaBackend gpu(0);
  const DetectorShape detector{8, 12};
  std::vector<std::uint16_t> raw(detector.pixels(), 1000);
  const FrameView view{raw.data(), PixelType::kUint16, detector};
  ScanSetup setup;
  setup.geometry = test::circular_geometry(BeamKind::kCone, detector, 6);
  EXPECT_THROW(gpu.preprocess(view, setup.geometry.vectors[0], nullptr), BackendError);
  gpu.begin_scan(setup);
  auto target = gpu.create_target(slice_grid(default_slices(test::centered_box(5))[2], 4, 4));
  auto projection = gpu.preprocess(view, setup.geometry.vectors[0], nullptr);
  const ProjectionMap map = make_projection_maps(setup.geometry)[0];
  EXPECT_THROW(gpu.replace_projection(6, map, std::move(projection), {target.get()}, {}, 1.0f),
               BackendError);
  const FrameView wrong_type{raw.data(), PixelType::kFloat32, detector};
  EXPECT_THROW(gpu.preprocess(wrong_type, setup.geometry.vectors[0], nullptr), BackendError);
  EXPECT_THROW(gpu.backproject_store({0}, *target, 1.0f, false, 0, 2), BackendError);
  EXPECT_THROW(gpu.create_target(GridSpec{}), BackendError);
  EXPECT_THROW(gpu.set_slot_maps({map}), BackendError);
  CpuBackend cpu(CpuBackendOptions{1, 0});
  cpu.begin_scan(setup);
  auto cpu_projection = cpu.preprocess(view, setup.geometry.vectors[0], nullptr);
  EXPECT_THROW(gpu.filter(*cpu_projection), BackendError);
  auto cpu_target = cpu.create_target(target->grid());
  EXPECT_THROW(gpu.clear_target(*cpu_target), BackendError);
  // A buffer from the previous scan is refused after a new begin_scan.
  auto stale = gpu.preprocess(view, setup.geometry.vectors[0], nullptr);
  gpu.begin_scan(setup);
  EXPECT_THROW(gpu.filter(*stale), BackendError);
}

}  // namespace
}  // namespace slicestream
