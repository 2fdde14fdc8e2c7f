// The CUDA backend against the CPU backend: the same sequence of calls (calibration, frames of
// the analytic phantom through preprocess, filter and replace_projection with live, accumulate
// and preview targets, a centre-of-rotation change, full recomputes) must give the same targets
// (exact interpolation: to 1e-5, hardware texture filtering: to 3e-3 in these small scans); the
// incremental targets must equal a full recompute; errors are BackendErrors.
// Batched updates, the store's one copy and the whole pipeline: cuda_backend_batching_test.cpp;
// accuracy against the object: cuda_backend_phantom_test.cpp.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "pipeline/backend/cuda/cuda_backend.hpp"
#include "tests/kernels/cuda/cuda_backend_test_support.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream::test {
namespace {

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
  const std::vector<Variant> cuda_variants = variants();
  for (const Variant& v : cuda_variants) {
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

  // Every CUDA variant against the CPU backend, and the variants against each other (graph
  // replay runs the same kernels on the same data as the step-by-step path).
  auto expect_all_same = [&](auto member, const std::string& what) {
    for (std::size_t b = 1; b < count; ++b) {
      const Variant& v = cuda_variants[b - 1];
      expect_same(cpu, *backends[b], *member(targets[0]), *member(targets[b]),
                  what + " (" + v.name + ")", tolerance_vs_cpu(v.options));
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
    for (std::size_t b = 0; b < count; ++b) {
      auto projection =
          backends[b]->preprocess(view, setup.geometry.vectors[static_cast<std::size_t>(slot)]);
      backends[b]->filter(*projection);
      backends[b]->replace_projection(slot, maps[static_cast<std::size_t>(slot)],
                                      std::move(projection), live_of(targets[b]),
                                      {targets[b].accumulate.get()}, scale);
    }
    // Guard counts are read back per batch of frames: every few frames here.
    if (frame % 5 != 4) return;
    const std::vector<PreprocessCounters> expected = backends[0]->take_preprocess_counts();
    ASSERT_EQ(expected.size(), 5u);
    EXPECT_GT(expected.back().clamped_low, 0u);  // the planted guard case
    for (std::size_t b = 1; b < count; ++b) {
      const std::vector<PreprocessCounters> counts = backends[b]->take_preprocess_counts();
      ASSERT_EQ(counts.size(), expected.size());
      for (std::size_t k = 0; k < counts.size(); ++k) {
        EXPECT_EQ(counts[k].clamped_low, expected[k].clamped_low);
        EXPECT_EQ(counts[k].non_finite, expected[k].non_finite);
      }
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
    const double drift = test::relative_error(read(*backends[b], *targets[b].live[1]),
                                              read(*backends[b], *targets[b].recompute));
    std::printf("%s %zu: incremental vs full recompute %.3g\n", backends[b]->info().name.c_str(), b,
                drift);
    EXPECT_LE(drift, b == 0 ? 1e-5 : tolerance_incremental(cuda_variants[b - 1].options))
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
  // parameter-block size: small, and the two-source path's), the filter one per projection
  // buffer its padded output went to (the in-flight buffers) or one with a crop of its own.
  const CudaBackend::GraphCounts graphs = gpus[1]->graph_captures();
  EXPECT_EQ(graphs.preprocess, 1u);
  EXPECT_GE(graphs.filter, 1u);
  EXPECT_LE(graphs.filter, setup.projections_in_flight + 4);
  EXPECT_EQ(gpus.back()->graph_captures().filter, 1u);
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

// Targets admitted from several threads at once (the reconstruct stage's slices beside the
// refinement worker's refiners) never take the reserve: each admission holds its bytes until its
// allocation is made (DeviceMemoryAdmissions). Room is left for three and a half targets: three
// fit, or two when a check falls between another target's allocation and its ticket's release
// (the bytes then count twice), never four.
TEST(CudaBackend, ConcurrentTargetsNeverTakeTheReserve) {
  SLICESTREAM_REQUIRE_GPU();
  const GridSpec grid = slice_grid(default_slices(test::centered_box(5))[2], 8192, 8192);
  const std::size_t target_bytes = grid.points() * sizeof(float);  // 256 MiB
  {
    // The context's lazy set-up (module loads for the target's zero fill) happens here, not
    // while the threads below are admitted.
    CudaBackend warm_up(0);
    warm_up.create_target(slice_grid(default_slices(test::centered_box(5))[2], 4, 4));
  }
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  ASSERT_GT(free_bytes, 8 * target_bytes) << "too little free device memory for this test";
  CudaBackendOptions options;
  options.reserve_bytes = free_bytes - (7 * target_bytes) / 2;
  CudaBackend gpu(0, options);

  constexpr int kThreads = 12;
  std::vector<std::unique_ptr<ReconTarget>> targets(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      try {
        targets[i] = gpu.create_target(grid);
      } catch (const BackendError& e) {
        errors[i] = e.what();
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  int admitted = 0;
  for (int i = 0; i < kThreads; ++i) {
    if (targets[i]) {
      ++admitted;
    } else {
      EXPECT_NE(errors[i].find("does not fit"), std::string::npos) << errors[i];
    }
  }
  EXPECT_LE(admitted, 3);
  EXPECT_GE(admitted, 2);
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_GE(free_bytes, options.reserve_bytes);
}

// --cuda-wait reaches the device: each backend sets how the host waits, keeping the other flags,
// and a later backend may set it again on the now active context.
TEST(CudaBackend, HostWaitIsSetOnTheDevice) {
  SLICESTREAM_REQUIRE_GPU();
  const auto schedule = [] {
    unsigned int flags = 0;
    EXPECT_EQ(cudaGetDeviceFlags(&flags), cudaSuccess);
    return flags & cudaDeviceScheduleMask;
  };
  for (const auto& [wait, expected] : std::vector<std::pair<CudaHostWait, unsigned int>>{
           {CudaHostWait::kBlock, cudaDeviceScheduleBlockingSync},
           {CudaHostWait::kSpin, cudaDeviceScheduleSpin},
           {CudaHostWait::kYield, cudaDeviceScheduleYield},
           {CudaHostWait::kAuto, cudaDeviceScheduleAuto}}) {
    SCOPED_TRACE(to_string(wait));
    CudaBackendOptions options;
    options.host_wait = wait;
    CudaBackend gpu(0, options);
    EXPECT_EQ(schedule(), expected);
    // The backend works with it: a scan begins and a slice is read back.
    ScanSetup setup;
    setup.geometry = test::circular_geometry(BeamKind::kParallel, {8, 8}, 4);
    gpu.begin_scan(setup);
    auto target = gpu.create_target(slice_grid(default_slices(test::centered_box(5))[2], 4, 4));
    std::unique_ptr<TargetReadback> readback = gpu.read_target_async(*target);
    readback->wait();
    EXPECT_EQ(readback->size(), 16u);
  }
}

TEST(CudaBackend, MisuseIsABackendError) {
  SLICESTREAM_REQUIRE_GPU();
  CudaBackend gpu(0);
  const DetectorShape detector{8, 12};
  std::vector<std::uint16_t> raw(detector.pixels(), 1000);
  const FrameView view{raw.data(), PixelType::kUint16, detector};
  ScanSetup setup;
  setup.geometry = test::circular_geometry(BeamKind::kCone, detector, 6);
  EXPECT_THROW(gpu.preprocess(view, setup.geometry.vectors[0]), BackendError);
  gpu.begin_scan(setup);
  auto target = gpu.create_target(slice_grid(default_slices(test::centered_box(5))[2], 4, 4));
  auto projection = gpu.preprocess(view, setup.geometry.vectors[0]);
  const ProjectionMap map = make_projection_maps(setup.geometry)[0];
  EXPECT_THROW(gpu.replace_projection(6, map, std::move(projection), {target.get()}, {}, 1.0f),
               BackendError);
  const FrameView wrong_type{raw.data(), PixelType::kFloat32, detector};
  EXPECT_THROW(gpu.preprocess(wrong_type, setup.geometry.vectors[0]), BackendError);
  EXPECT_THROW(gpu.backproject_store({0}, *target, 1.0f, false, 0, 2), BackendError);
  EXPECT_THROW(gpu.create_target(GridSpec{}), BackendError);
  EXPECT_THROW(gpu.set_slot_maps({map}), BackendError);
  CpuBackend cpu(CpuBackendOptions{1, 0});
  cpu.begin_scan(setup);
  auto cpu_projection = cpu.preprocess(view, setup.geometry.vectors[0]);
  EXPECT_THROW(gpu.filter(*cpu_projection), BackendError);
  auto cpu_target = cpu.create_target(target->grid());
  EXPECT_THROW(gpu.clear_target(*cpu_target), BackendError);
  // A buffer from the previous scan is refused after a new begin_scan.
  auto stale = gpu.preprocess(view, setup.geometry.vectors[0]);
  gpu.begin_scan(setup);
  EXPECT_THROW(gpu.filter(*stale), BackendError);
}

}  // namespace
}  // namespace slicestream::test
