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
#include "pipeline/cpu_backend.hpp"
#include "pipeline/cuda_backend/cuda_backend.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

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

void run_same_sequence(BeamKind beam) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape detector{40, 64};
  const int window = 24;
  const VolumeBox box = test::centered_box(20.0);
  ScanSetup setup;
  setup.geometry = test::circular_geometry(beam, detector, window);
  setup.pixel_type = PixelType::kUint16;
  setup.filter = {FilterWindow::kSheppLogan, 0.9f};
  setup.projections_in_flight = 4;
  const float scale = angular_weight(window);
  std::vector<float> dark = random.floats(detector.pixels(), 95.0, 105.0);
  std::vector<float> flat = random.floats(detector.pixels(), 20050.0, 20150.0);

  CpuBackend cpu(CpuBackendOptions{2, 0});
  CudaBackend gpu(0);
  EXPECT_EQ(gpu.info().name, "cuda");
  Backend* backends[2] = {&cpu, &gpu};
  Targets targets[2];
  for (int b = 0; b < 2; ++b) {
    backends[b]->begin_scan(setup);
    backends[b]->set_calibration(dark, flat);
    targets[b] = make_targets(*backends[b], box);
  }
  EXPECT_GT(gpu.info().memory_used_by_scan_bytes, detector.pixels() * window * sizeof(float));

  // Two rotations of a phantom that moves between them (the second rotation's updates are real
  // differences), then a centre-of-rotation change, then frames taken with the new maps.
  auto object = phantom::shepp_logan_3d(box, 0.02);
  std::vector<ProjectionMap> maps = make_projection_maps(setup.geometry);
  auto feed = [&](int frame) {
    const int slot = frame % window;
    const std::vector<std::uint16_t> raw = phantom_frame(random, object, setup.geometry, slot);
    const FrameView view{raw.data(), PixelType::kUint16, detector};
    PreprocessCounters counts[2];
    for (int b = 0; b < 2; ++b) {
      auto projection = backends[b]->preprocess(
          view, setup.geometry.vectors[static_cast<std::size_t>(slot)], &counts[b]);
      backends[b]->filter(*projection);
      backends[b]->replace_projection(slot, maps[static_cast<std::size_t>(slot)],
                                      std::move(projection), live_of(targets[b]),
                                      {targets[b].accumulate.get()}, scale);
    }
    EXPECT_EQ(counts[0].clamped_low, counts[1].clamped_low);
    EXPECT_EQ(counts[0].non_finite, counts[1].non_finite);
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
        expect_same(cpu, gpu, *targets[0].live[s], *targets[1].live[s],
                    "live slice " + std::to_string(s) + " after frame " + std::to_string(frame));
      }
    }
  }
  expect_same(cpu, gpu, *targets[0].preview, *targets[1].preview, "preview");
  expect_same(cpu, gpu, *targets[0].accumulate, *targets[1].accumulate, "accumulate target");

  // Incremental = full recompute (on each backend).
  std::vector<int> all_slots;
  for (int s = 0; s < window; ++s)
    all_slots.push_back(s);
  for (int b = 0; b < 2; ++b) {
    backends[b]->backproject_store(all_slots, *targets[b].recompute, scale, false, 0, 1);
    EXPECT_LE(test::relative_error(read(*backends[b], *targets[b].live[1]),
                                   read(*backends[b], *targets[b].recompute)),
              1e-5)
        << backends[b]->info().name << ": incremental vs full recompute";
  }
  expect_same(cpu, gpu, *targets[0].recompute, *targets[1].recompute, "full recompute");

  // Centre of rotation moves: stored data stay, maps change; the live slices are recomputed, and
  // frames arriving with yet other maps take the two-source path (+BP(new) - BP(old)).
  const ScanGeometry shifted = with_rotation_axis_offset(setup.geometry, 0.7);
  const std::vector<ProjectionMap> shifted_maps = make_projection_maps(shifted);
  for (int b = 0; b < 2; ++b) {
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
    expect_same(cpu, gpu, *targets[0].live[s], *targets[1].live[s],
                "live slice " + std::to_string(s) + " after the map change");
  }
  expect_same(cpu, gpu, *targets[0].preview, *targets[1].preview, "preview after the map change");

  // copy_target and clear_target.
  for (int b = 0; b < 2; ++b) {
    backends[b]->copy_target(*targets[b].live[1], *targets[b].recompute);
    backends[b]->clear_target(*targets[b].live[0]);
  }
  expect_same(cpu, gpu, *targets[0].recompute, *targets[1].recompute, "copied target");
  EXPECT_EQ(test::max_abs(read(gpu, *targets[1].live[0])), 0.0);
  for (int b = 0; b < 2; ++b)
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
