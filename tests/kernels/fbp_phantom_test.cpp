// End to end on the CPU kernels: exact projections of the 3D Shepp-Logan phantom -> (cosine
// weighting through the preprocessing pass) -> ramp filter -> backprojection with the pi/N angular
// weight -> the three central slices, compared with the phantom itself. Checks the relative error
// and, more importantly, the absolute scale: reconstructed values are attenuation per mm.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/backproject_cpu.hpp"
#include "kernels/cpu/preprocess_cpu.hpp"
#include "kernels/cpu/ramp_filter_cpu.hpp"
#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "kernels/projection_map.hpp"
#include "tests/kernels/test_support.hpp"

namespace slicestream {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kOuterAttenuation = 0.02;  // per mm
constexpr int kSliceSide = 128;

const VolumeBox kBox{{-32, -32, -32}, {32, 32, 32}};

struct SliceResult {
  std::vector<float> reconstruction;
  std::vector<float> reference;
};

// Projects (2 x 2 rays per pixel against aliasing), weights, filters and backprojects into the
// three default slices of kBox.
std::vector<SliceResult> reconstruct_central_slices(const ScanGeometry& geometry) {
  const std::vector<phantom::Ellipsoid> phantom = phantom::shepp_logan_3d(kBox, kOuterAttenuation);
  const DetectorShape detector = geometry.detector;
  const std::vector<ProjectionMap> maps = make_projection_maps(geometry);
  const cpu::PreprocessTables tables = cpu::make_preprocess_tables(detector, {}, {});
  PreprocessParams linear;
  linear.already_linear = true;  // the phantom gives line integrals
  cpu::RampFilter ramp(detector, FilterConfig{}, 1);

  std::vector<std::vector<float>> filtered;
  std::vector<float> line_integrals(detector.pixels());
  for (const ProjectionVector& vec : geometry.vectors) {
    phantom::project(phantom, geometry.beam, vec, detector, line_integrals.data(), 2);
    std::vector<float> projection(detector.pixels());
    PreprocessCounters counters;
    cpu::preprocess_rows({line_integrals.data(), PixelType::kFloat32, detector}, tables, linear,
                         make_cosine_weight(geometry.beam, vec, detector), projection.data(), 0,
                         detector.rows, &counters);
    EXPECT_EQ(counters.non_finite, 0u);
    ramp.filter_rows(projection.data(), 0, detector.rows, 0);
    filtered.push_back(std::move(projection));
  }
  std::vector<cpu::ProjectionRef> refs;
  for (std::size_t p = 0; p < filtered.size(); ++p)
    refs.push_back({filtered[p].data(), maps[p]});

  const float scale = angular_weight(static_cast<int>(refs.size()));
  std::vector<SliceResult> results;
  for (const SliceOrientation& slice : default_slices(kBox)) {
    const GridSpec grid = slice_grid(slice, kSliceSide, kSliceSide);
    SliceResult result;
    result.reconstruction.assign(grid.points(), 0.0f);
    cpu::backproject_rows(grid, detector, refs.data(), static_cast<int>(refs.size()), scale,
                          result.reconstruction.data(), 0, 0, grid.height);
    result.reference = phantom::sample(phantom, grid, 4);
    results.push_back(std::move(result));
  }
  return results;
}

// Pixels whose reference value equals `value` (any value if `value` < 0) and whose neighbours
// within `margin` pixels all equal it: regions away from every edge of the phantom.
std::vector<std::size_t> uniform_interior(const std::vector<float>& reference, float value,
                                          int margin) {
  std::vector<std::size_t> inside;
  for (int j = margin; j < kSliceSide - margin; ++j) {
    for (int i = margin; i < kSliceSide - margin; ++i) {
      const float center = reference[static_cast<std::size_t>(j * kSliceSide + i)];
      if (value >= 0 && center != value) continue;
      bool uniform = true;
      for (int dj = -margin; dj <= margin && uniform; ++dj) {
        for (int di = -margin; di <= margin && uniform; ++di) {
          uniform = reference[static_cast<std::size_t>((j + dj) * kSliceSide + i + di)] == center;
        }
      }
      if (uniform) inside.push_back(static_cast<std::size_t>(j * kSliceSide + i));
    }
  }
  return inside;
}

struct Thresholds {
  double relative_error;         // whole slice: dominated by the blur of the phantom's edges
  double smooth_relative_error;  // away from edges: streaks, cupping, cone-beam artefacts
};

void check_slices(const std::vector<SliceResult>& slices, const Thresholds thresholds[3]) {
  const char* names[3] = {"x = 0 (y-z)", "y = 0 (x-z)", "z = 0 (axial)"};
  const float brain = static_cast<float>(0.2 * kOuterAttenuation);
  for (int s = 0; s < 3; ++s) {
    SCOPED_TRACE(names[s]);
    const SliceResult& slice = slices[static_cast<std::size_t>(s)];
    const double error = test::relative_error(slice.reconstruction, slice.reference);
    // Smooth regions: every pixel at least 3 pixels from an edge, inside the phantom or not.
    std::vector<double> rec_smooth, ref_smooth;
    for (std::size_t i : uniform_interior(slice.reference, -1.0f, 3)) {
      rec_smooth.push_back(slice.reconstruction[i]);
      ref_smooth.push_back(slice.reference[i]);
    }
    ASSERT_GT(rec_smooth.size(), 2000u);
    const double smooth_error = test::relative_error(rec_smooth, ref_smooth);
    // Absolute scale: the mean deep inside the uniform "brain".
    const std::vector<std::size_t> region = uniform_interior(slice.reference, brain, 4);
    ASSERT_GT(region.size(), 200u);
    double mean = 0;
    for (std::size_t i : region)
      mean += slice.reconstruction[i];
    mean /= static_cast<double>(region.size());
    const std::string prefix = std::string("slice") + std::to_string(s);
    testing::Test::RecordProperty(prefix + "_relative_error", std::to_string(error));
    testing::Test::RecordProperty(prefix + "_smooth_relative_error", std::to_string(smooth_error));
    testing::Test::RecordProperty(prefix + "_brain_mean_ratio", std::to_string(mean / brain));
    EXPECT_LT(error, thresholds[s].relative_error);
    EXPECT_LT(smooth_error, thresholds[s].smooth_relative_error);
    EXPECT_NEAR(mean / brain, 1.0, 0.02) << "mean " << mean << " over " << region.size();
  }
}

TEST(FbpPhantom, ParallelBeamCentralSlices) {
  const DetectorShape detector{112, 128};
  CircularParallelParams params;
  params.pixel_width_mm = 0.6;
  params.pixel_height_mm = 0.6;
  const int angles = 180;  // over 180 degrees
  for (int a = 0; a < angles; ++a)
    params.angles_rad.push_back(kPi * a / angles);
  const auto slices = reconstruct_central_slices(make_parallel_geometry(detector, params));
  // Measured (whole, smooth): (0.154, 0.017), (0.215, 0.080), (0.167, 0.111); the smooth-region
  // residue is the Ram-Lak ringing of the high-contrast skull (no apodisation on purpose).
  const Thresholds thresholds[3] = {{0.19, 0.03}, {0.26, 0.10}, {0.2, 0.135}};
  check_slices(slices, thresholds);
}

TEST(FbpPhantom, ConeBeamFdkCentralSlices) {
  const DetectorShape detector{112, 128};
  CircularConeParams params;
  params.source_origin_mm = 200;
  params.origin_detector_mm = 100;
  params.pixel_width_mm = 0.9;  // 0.6 mm at the rotation axis
  params.pixel_height_mm = 0.9;
  const int angles = 360;  // over 360 degrees
  for (int a = 0; a < angles; ++a)
    params.angles_rad.push_back(2 * kPi * a / angles);
  const auto slices = reconstruct_central_slices(make_cone_geometry(detector, params));
  // Measured: (0.155, 0.051), (0.221, 0.102), (0.161, 0.110); the vertical slices add FDK's
  // cone-beam artefacts far from the mid-plane.
  const Thresholds thresholds[3] = {{0.19, 0.065}, {0.26, 0.125}, {0.2, 0.135}};
  check_slices(slices, thresholds);
}

}  // namespace
}  // namespace slicestream
