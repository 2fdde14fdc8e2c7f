// Accuracy where it matters: exact line integrals of the 3D Shepp-Logan phantom through each
// backend's preprocess, filter and store updates into the three central slices, compared with the
// phantom itself. The CUDA backend's slices (hardware texture filtering with fp32 and fp16 texels,
// and exact interpolation) must be as close to the object as the CPU backend's (error within 1.02
// times the CPU backend's) and within 1e-3 of the CPU backend's slices; parallel and cone beam.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "pipeline/backend/cuda/cuda_backend.hpp"
#include "tests/kernels/cuda/cuda_backend_test_support.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace slicestream::test {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kSliceSide = 128;
const VolumeBox kBox{{-32, -32, -32}, {32, 32, 32}};

struct PhantomData {
  ScanGeometry geometry;
  std::vector<std::vector<float>> line_integrals;  // one per projection, 2 x 2 rays per pixel
  std::vector<GridSpec> slices;
  std::vector<std::vector<float>> reference;  // the phantom sampled on each slice
};

PhantomData phantom_data(const ScanGeometry& geometry) {
  PhantomData d;
  d.geometry = geometry;
  const auto object = phantom::shepp_logan_3d(kBox, 0.02);
  for (const ProjectionVector& vector : geometry.vectors) {
    std::vector<float> values(geometry.detector.pixels());
    phantom::project(object, geometry.beam, vector, geometry.detector, values.data(), 2);
    d.line_integrals.push_back(std::move(values));
  }
  for (const SliceOrientation& slice : default_slices(kBox)) {
    d.slices.push_back(slice_grid(slice, kSliceSide, kSliceSide));
    d.reference.push_back(phantom::sample(object, d.slices.back(), 4));
  }
  return d;
}

// The three slices as `backend` reconstructs them from the phantom's line integrals, one
// projection after another into the live slices (the streaming path).
std::vector<std::vector<float>> reconstruct(Backend& backend, const PhantomData& d) {
  ScanSetup setup;
  setup.geometry = d.geometry;
  setup.pixel_type = PixelType::kFloat32;
  setup.preprocess.already_linear = true;
  setup.projections_in_flight = 4;
  backend.begin_scan(setup);
  std::vector<std::unique_ptr<ReconTarget>> targets;
  std::vector<ReconTarget*> live;
  for (const GridSpec& grid : d.slices) {
    targets.push_back(backend.create_target(grid));
    live.push_back(targets.back().get());
  }
  const std::vector<ProjectionMap> maps = make_projection_maps(d.geometry);
  const float scale = angular_weight(static_cast<int>(maps.size()));
  for (std::size_t p = 0; p < maps.size(); ++p) {
    const FrameView view{d.line_integrals[p].data(), PixelType::kFloat32, d.geometry.detector};
    auto projection = backend.preprocess(view, d.geometry.vectors[p]);
    backend.filter(*projection);
    backend.replace_projection(static_cast<int>(p), maps[p], std::move(projection), live, {},
                               scale);
  }
  std::vector<std::vector<float>> slices;
  for (const auto& target : targets)
    slices.push_back(read(backend, *target));
  backend.end_scan();
  return slices;
}

void check_against_the_object(const ScanGeometry& geometry) {
  const PhantomData d = phantom_data(geometry);
  CpuBackend cpu(CpuBackendOptions{2, 0});
  const std::vector<std::vector<float>> expected = reconstruct(cpu, d);
  const char* names[3] = {"x = 0 (y-z)", "y = 0 (x-z)", "z = 0 (axial)"};
  for (const Variant& v : variants()) {
    if (!v.options.use_graphs) continue;  // graph replay runs the same kernels
    SCOPED_TRACE(v.name);
    CudaBackend gpu(0, v.options);
    const std::vector<std::vector<float>> actual = reconstruct(gpu, d);
    for (std::size_t s = 0; s < 3; ++s) {
      SCOPED_TRACE(names[s]);
      const double cpu_error = relative_error(expected[s], d.reference[s]);
      const double gpu_error = relative_error(actual[s], d.reference[s]);
      const double to_cpu = relative_error(actual[s], expected[s]);
      std::printf(
          "%s, %s, slice %s: error vs the object %.5f (CPU backend %.5f, ratio %.5f), "
          "vs the CPU backend %.2e\n",
          to_string(geometry.beam), v.name, names[s], gpu_error, cpu_error, gpu_error / cpu_error,
          to_cpu);
      ASSERT_GT(cpu_error, 0.0);
      EXPECT_LT(cpu_error, 0.3) << "the reconstruction resembles the object";
      EXPECT_LE(gpu_error, 1.02 * cpu_error);
      EXPECT_LE(to_cpu, tolerance_vs_cpu(v.options));
    }
  }
}

TEST(CudaBackendPhantom, ParallelBeamSlicesAreAsCloseToTheObjectAsTheCpuBackends) {
  SLICESTREAM_REQUIRE_GPU();
  const DetectorShape detector{112, 128};
  CircularParallelParams params;
  params.pixel_width_mm = 0.6;
  params.pixel_height_mm = 0.6;
  for (int a = 0; a < 180; ++a)
    params.angles_rad.push_back(kPi * a / 180);
  check_against_the_object(make_parallel_geometry(detector, params));
}

TEST(CudaBackendPhantom, ConeBeamSlicesAreAsCloseToTheObjectAsTheCpuBackends) {
  SLICESTREAM_REQUIRE_GPU();
  const DetectorShape detector{112, 128};
  CircularConeParams params;
  params.source_origin_mm = 200;
  params.origin_detector_mm = 100;
  params.pixel_width_mm = 0.9;
  params.pixel_height_mm = 0.9;
  for (int a = 0; a < 360; ++a)
    params.angles_rad.push_back(2 * kPi * a / 360);
  check_against_the_object(make_cone_geometry(detector, params));
}

}  // namespace
}  // namespace slicestream::test
