// The CUDA backend's batched updates against the same updates one by one on the CPU backend, one
// stored copy of each projection on every path, and the whole pipeline on the GPU against the
// pipeline on the CPU.
#include <gtest/gtest.h>

#include <algorithm>
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
// CPU backend: batches longer than max_projection_batch, repeated slots inside a batch, live,
// shadow (accumulate, then live) and preview targets, maps that change; an odd detector and odd
// grids.
void run_batched(BeamKind beam, const CudaBackendOptions& options) {
  // An odd detector; 16 projections in flight: a whole batch is filtered before it is stored.
  const PhantomScan scan = phantom_scan(beam, {37, 53}, 15, {FilterWindow::kHamming, 0.85f}, 16);
  ScanSetup setup = scan.setup;
  setup.max_projection_batch = 4;  // batches below are longer: split into runs of at most 4
  const float scale = scan.scale;
  RandomSource random;
  SCOPED_TRACE(random.trace());
  CpuBackend cpu(CpuBackendOptions{2, 0});
  CudaBackend gpu(0, options);
  const double tolerance = tolerance_vs_cpu(options);
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
        auto projection =
            backends[b]->preprocess(view, setup.geometry.vectors[static_cast<std::size_t>(slot)]);
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
                  "live slice " + std::to_string(s) + " after frame " + std::to_string(frame),
                  tolerance);
    }
    expect_same(cpu, gpu, *shadow[0], *shadow[1], "shadow after frame " + std::to_string(frame),
                tolerance);
  }
  expect_same(cpu, gpu, *targets[0].preview, *targets[1].preview, "preview", tolerance);
  expect_same(cpu, gpu, *targets[0].accumulate, *targets[1].accumulate, "accumulate target",
              tolerance);
  // The store: a full recompute from it matches too, and equals the incremental slice.
  std::vector<int> all_slots;
  for (int s = 0; s < scan.window; ++s)
    all_slots.push_back(s);
  for (int b = 0; b < 2; ++b) {
    backends[b]->backproject_store(all_slots, *targets[b].recompute, scale, false, 0, 1);
  }
  expect_same(cpu, gpu, *targets[0].recompute, *targets[1].recompute, "full recompute", tolerance);
  EXPECT_LE(test::relative_error(read(gpu, *targets[1].live[1]), read(gpu, *targets[1].recompute)),
            tolerance_incremental(options));
}

TEST(CudaBackend, BatchedUpdatesEqualOneByOneOnTheCpuCone) {
  SLICESTREAM_REQUIRE_GPU();
  for (const Variant& v : variants()) {
    SCOPED_TRACE(v.name);
    run_batched(BeamKind::kCone, v.options);
  }
}

TEST(CudaBackend, BatchedUpdatesEqualOneByOneOnTheCpuParallel) {
  SLICESTREAM_REQUIRE_GPU();
  for (const Variant& v : variants()) {
    SCOPED_TRACE(v.name);
    run_batched(BeamKind::kParallel, v.options);
  }
}

// Each interpolation keeps ONE copy of every projection, in the form it reads: the scan's memory
// differs between fp32 texels, fp16 texels and fp32 rows by exactly the store's texel bytes (and,
// for texture layers, their centre lines of cols + 3 entries of 8 bytes).
TEST(CudaBackend, TheStoreHoldsOneCopyOfEachProjection) {
  SLICESTREAM_REQUIRE_GPU();
  const PhantomScan scan =
      phantom_scan(BeamKind::kCone, {33, 47}, 12, {FilterWindow::kRamLak, 1.0f}, 4);
  std::vector<std::size_t> bytes;
  for (const Variant& v : variants()) {
    CudaBackend gpu(0, v.options);
    gpu.begin_scan(scan.setup);
    bytes.push_back(gpu.info().memory_used_by_scan_bytes);
  }
  const std::size_t pixels = scan.setup.geometry.detector.pixels();
  const std::size_t window = static_cast<std::size_t>(scan.window);
  const auto scratch = static_cast<std::size_t>(std::max(1, scan.setup.max_projection_batch));
  const std::size_t lines =
      (window + scratch) *
      static_cast<std::size_t>(cuda::centre_line_entries(scan.setup.geometry.detector.cols)) * 8;
  EXPECT_EQ(bytes[0] + lines, bytes[2]) << "exact (fp32 rows) and texture (fp32 texels)";
  EXPECT_EQ(bytes[2] - bytes[5], (window + scratch) * pixels * 2)
      << "fp16 texels: half the store and its scratch layers";
  const DetectorShape detector = scan.setup.geometry.detector;
  const std::size_t pair_texels =
      static_cast<std::size_t>(cuda::mirrored_texel_rows(detector.rows)) *
      static_cast<std::size_t>(detector.cols);
  EXPECT_EQ(bytes[2] - bytes[3], (window + scratch) * (pixels - pair_texels) * 4)
      << "mirrored fp16 pairs: (rows + 3) / 2 rows of pairs";
  CudaSettings exact_half;  // exact interpolation reads fp32 rows
  exact_half.interpolation = CudaInterpolation::kExact;
  exact_half.texels = CudaTexels::kFloat16;
  EXPECT_THROW(cuda_backend_options(exact_half), BackendError);
  // The server's default (auto): mirrored fp16 pairs with texture interpolation, fp32 rows with
  // exact.
  const CudaSettings defaults;
  EXPECT_TRUE(cuda_backend_options(defaults).half_texels);
  EXPECT_EQ(projection_storage(cuda_backend_options(defaults)),
            cuda::ProjectionStorage::kTextureHalfMirrored);
  CudaSettings single = defaults;
  single.texels = CudaTexels::kFloat16;
  EXPECT_EQ(projection_storage(cuda_backend_options(single)),
            cuda::ProjectionStorage::kTextureHalf);
  CudaSettings exact_mirrored = defaults;
  exact_mirrored.interpolation = CudaInterpolation::kExact;
  exact_mirrored.texels = CudaTexels::kFloat16Mirrored;
  EXPECT_THROW(cuda_backend_options(exact_mirrored), BackendError);
  CudaSettings exact = defaults;
  exact.interpolation = CudaInterpolation::kExact;
  EXPECT_EQ(projection_storage(cuda_backend_options(exact)), cuda::ProjectionStorage::kLinear);
  CudaSettings full = defaults;
  full.texels = CudaTexels::kFloat32;
  EXPECT_EQ(projection_storage(cuda_backend_options(full)), cuda::ProjectionStorage::kTexture);
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
      EXPECT_LE(test::relative_error(published->values, full.slice->values),
                b == 0 ? 1e-5 : tolerance_incremental(CudaBackendOptions{}))
          << "slice " << slice.slice_id << ": incremental vs full recompute";
      last[b].push_back(published->values.to_vector());
    }
  }
  for (std::size_t s = 0; s < last[0].size(); ++s) {
    EXPECT_LE(test::relative_error(last[1][s], last[0][s]), tolerance_vs_cpu(CudaBackendOptions{}))
        << "slice " << s << ": GPU vs CPU";
  }
}

}  // namespace
}  // namespace slicestream::test
