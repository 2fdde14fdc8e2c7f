// Several rotations of a moving phantom through the CUDA backend in batches of 8, as the
// reconstruct stage drives it (preprocess, filter, replace_projections with live slices): the
// filter's padded rows taken by the store's replacement pass (the default) against the same
// updates with the filter's crop in a pass of its own, against the CPU backend, and the live
// slices against a full recompute from the store after every rotation; in every storage.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
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

constexpr int kBatch = 8;
constexpr int kRotations = 4;

void run_sliding_window(const CudaBackendOptions& options) {
  const PhantomScan scan =
      phantom_scan(BeamKind::kCone, {37, 53}, 15, {FilterWindow::kHamming, 0.85f}, 16);
  ScanSetup setup = scan.setup;
  setup.max_projection_batch = kBatch;
  const int window = scan.window;
  RandomSource random;
  SCOPED_TRACE(random.trace());
  CudaBackendOptions separate_options = options;
  separate_options.crop_in_store_update = false;
  CpuBackend cpu(CpuBackendOptions{2, 0});
  CudaBackend fused(0, options);
  CudaBackend separate(0, separate_options);
  Backend* backends[3] = {&cpu, &fused, &separate};
  Targets targets[3];
  for (int b = 0; b < 3; ++b) {
    backends[b]->begin_scan(setup);
    targets[b] = make_targets(*backends[b], scan.box);
  }
  auto object = phantom::shepp_logan_3d(scan.box, 0.02);
  const std::vector<ProjectionMap> maps = make_projection_maps(setup.geometry);
  // The third rotation is taken with another centre of rotation: its updates take the two-source
  // path (the scratch keeps the old projection), the others backproject new - old.
  const std::vector<ProjectionMap> moved =
      make_projection_maps(with_rotation_axis_offset(setup.geometry, 0.35));
  std::vector<int> all_slots;
  for (int s = 0; s < window; ++s)
    all_slots.push_back(s);

  int frame = 0;
  for (int rotation = 0; rotation < kRotations; ++rotation) {
    for (auto& e : object)
      e.center_mm.x += 0.6;  // every rotation sees another object: real differences
    const std::vector<ProjectionMap>& rotation_maps = rotation == 2 ? moved : maps;
    const int rotation_end = (rotation + 1) * window;
    while (frame < rotation_end) {
      const int batch_end = std::min(frame + kBatch, rotation_end);
      std::vector<ProjectionUpdate> updates[3];
      for (; frame < batch_end; ++frame) {
        const int slot = frame % window;
        const std::vector<std::uint16_t> raw = phantom_frame(random, object, setup.geometry, slot);
        const FrameView view{raw.data(), PixelType::kUint16, setup.geometry.detector};
        for (int b = 0; b < 3; ++b) {
          ProjectionUpdate u;
          u.slot = slot;
          u.map = rotation_maps[static_cast<std::size_t>(slot)];
          u.projection =
              backends[b]->preprocess(view, setup.geometry.vectors[static_cast<std::size_t>(slot)]);
          backends[b]->filter(*u.projection);
          u.live = live_of(targets[b]);
          updates[b].push_back(std::move(u));
        }
      }
      for (int b = 0; b < 3; ++b) {
        backends[b]->replace_projections(updates[b], scan.scale);
        for (const ProjectionUpdate& u : updates[b])
          EXPECT_TRUE(u.applied);
      }
    }
    const std::string after = " after rotation " + std::to_string(rotation);
    for (std::size_t s = 0; s < 3; ++s) {
      const std::string what = "live slice " + std::to_string(s) + after;
      const std::vector<float> live = read(fused, *targets[1].live[s]);
      EXPECT_LE(test::relative_error(live, read(separate, *targets[2].live[s])), 1e-6)
          << what << ": the filter's crop fused into the store update vs a pass of its own";
      expect_same(cpu, fused, *targets[0].live[s], *targets[1].live[s], what + " vs the CPU",
                  tolerance_vs_cpu(options));
    }
    expect_same(cpu, fused, *targets[0].preview, *targets[1].preview, "preview" + after,
                tolerance_vs_cpu(options));
    fused.backproject_store(all_slots, *targets[1].recompute, scan.scale, false, 0, 1);
    const double drift =
        test::relative_error(read(fused, *targets[1].live[1]), read(fused, *targets[1].recompute));
    std::printf("incremental vs full recompute%s: %.3g\n", after.c_str(), drift);
    EXPECT_LE(drift, tolerance_incremental(options)) << "incremental vs full recompute" << after;
  }
  // One filter graph per projection buffer its padded output went to, none refused.
  const CudaBackend::GraphCounts graphs = fused.graph_captures();
  if (options.use_graphs) {
    EXPECT_GE(graphs.filter, 1u);
    EXPECT_LE(graphs.filter, setup.projections_in_flight + 4);
  }
  EXPECT_EQ(graphs.update_failures, 0u);
  for (Backend* backend : backends)
    backend->end_scan();
}

TEST(CudaBackend, SlidingWindowInBatchesEqualsRecomputeSeparateCropAndCpu) {
  SLICESTREAM_REQUIRE_GPU();
  for (const Variant& v : variants()) {
    if (!v.options.crop_in_store_update) continue;  // the reference path of each run
    SCOPED_TRACE(v.name);
    run_sliding_window(v.options);
  }
}

}  // namespace
}  // namespace slicestream::test
