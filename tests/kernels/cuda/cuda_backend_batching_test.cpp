// The CUDA backend's batched updates against the same updates one by one on the CPU backend, its
// texture layers on the exact and the hardware-filtering paths, and the whole pipeline on the GPU
// against the pipeline on the CPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "pipeline/backend/cuda/cuda_backend.hpp"
#include "tests/kernels/cuda/cuda_backend_test_support.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream::test {
namespace {

// Batched updates (replace_projections) on the GPU against the same updates one by one on the
// CPU backend: batches longer than max_projection_batch, repeated slots inside a batch, live, shadow
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

// The CPU backend and a CUDA backend with `options` through one scan: the store's texture layers
// written as `layers_written` says, the full recompute and the live slice within `tolerance`.
void expect_texture_path(const PhantomScan& scan, const CudaBackendOptions& options,
                         bool layers_written, double tolerance) {
  const ScanSetup& setup = scan.setup;
  const int window = scan.window;
  RandomSource random;
  SCOPED_TRACE(random.trace());
  CpuBackend cpu(CpuBackendOptions{2, 0});
  CudaBackend gpu(0, options);
  Backend* backends[2] = {&cpu, &gpu};
  std::unique_ptr<ReconTarget> live[2];
  std::unique_ptr<ReconTarget> full[2];
  const GridSpec grid = slice_grid(default_slices(scan.box)[0], 29, 35);
  for (int b = 0; b < 2; ++b) {
    backends[b]->begin_scan(setup);
    live[b] = backends[b]->create_target(grid);
    full[b] = backends[b]->create_target(grid);
  }
  EXPECT_EQ(gpu.texture_layer_writes(), layers_written);
  auto object = phantom::shepp_logan_3d(scan.box, 0.02);
  const std::vector<ProjectionMap> maps = make_projection_maps(setup.geometry);
  std::vector<int> all_slots;
  for (int s = 0; s < window; ++s)
    all_slots.push_back(s);
  auto feed = [&](int first, int count) {
    for (int f = first; f < first + count; ++f) {
      const int slot = f % window;
      const std::vector<std::uint16_t> raw = phantom_frame(random, object, setup.geometry, slot);
      const FrameView view{raw.data(), PixelType::kUint16, setup.geometry.detector};
      for (int b = 0; b < 2; ++b) {
        auto p = backends[b]->preprocess(
            view, setup.geometry.vectors[static_cast<std::size_t>(slot)], nullptr);
        backends[b]->filter(*p);
        backends[b]->replace_projection(slot, maps[static_cast<std::size_t>(slot)], std::move(p),
                                        {live[b].get()}, {}, scan.scale);
      }
    }
  };
  auto recompute_and_compare = [&](const std::string& what) {
    for (int b = 0; b < 2; ++b)
      backends[b]->backproject_store(all_slots, *full[b], scan.scale, false, 0, 1);
    const std::vector<float> expected = read(cpu, *full[0]);
    ASSERT_GT(test::max_abs(expected), 0.0);
    EXPECT_LE(test::relative_error(read(gpu, *full[1]), expected), tolerance) << what;
  };
  feed(0, window + 5);
  recompute_and_compare("after the first rotation");
  feed(window + 5, 7);
  recompute_and_compare("after more frames");
  EXPECT_LE(test::relative_error(read(gpu, *live[1]), read(cpu, *live[0])), tolerance);
  EXPECT_EQ(gpu.texture_layer_writes(), layers_written);
}

// The texture layers are written only while the interpolation reads them: skipped on the exact
// path (the default, matching the CPU backend to 1e-5), written on the hardware-filtering path
// (8-bit weights: within 3e-3 of the CPU twin; stale layers would be far off), through full
// recomputes and incremental updates alike.
TEST(CudaBackend, TextureLayersFollowTheInterpolationPath) {
  SLICESTREAM_REQUIRE_GPU();
  const PhantomScan scan =
      phantom_scan(BeamKind::kCone, {33, 47}, 12, {FilterWindow::kRamLak, 1.0f}, 4);
  struct Path {
    cuda::BackprojectInterpolation interpolation;
    bool layers_written;
    double tolerance;
  };
  for (const Path& path : {Path{cuda::BackprojectInterpolation::kLinearMemory, false, 1e-5},
                           Path{cuda::BackprojectInterpolation::kTextureLinear, true, 3e-3}}) {
    SCOPED_TRACE(cuda::to_string(path.interpolation));
    CudaBackendOptions options;
    options.tuning.interpolation = path.interpolation;
    expect_texture_path(scan, options, path.layers_written, path.tolerance);
  }
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

}  // namespace
}  // namespace slicestream::test
