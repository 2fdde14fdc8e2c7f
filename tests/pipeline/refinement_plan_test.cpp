// Which slices can be refined and how (refinement_plan.hpp), the sinogram window, and the CPU
// refiner's units: for axial slices of a parallel-beam scan (centred, off-centre and rotated,
// mirrored, between two detector rows or on one), the system matrix applied to the phantom
// sampled on the slice reproduces the measured line integrals of the slice's detector row(s):
// attenuation per mm times chord lengths in mm.
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/cpu_backend.hpp"
#include "pipeline/refinement_plan.hpp"
#include "pipeline/sinogram_window.hpp"
#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

constexpr double kPixelMm = 0.5;

test::TestScan scan_16x48() {
  return test::make_parallel_scan(1, {16, 48}, 60, PixelType::kUint16, 2, 2, kPixelMm);
}

using test::axial_slice_at;

TEST(RefinementPlan, DetectorRowsOfAxialSlices) {
  const test::TestScan scan = scan_16x48();
  const ScanGeometry& g = scan.description.geometry;
  RefinementPlan plan;
  // The box centre lies between rows 7 and 8 (16 rows): interpolated half and half.
  ASSERT_FALSE(plan_refinement(test::axial_slice(scan.description, 2, 48), g, &plan));
  EXPECT_DOUBLE_EQ(plan.detector_row, 7.5);
  EXPECT_EQ(plan.row_low, 7);
  EXPECT_EQ(plan.row_high, 8);
  EXPECT_FLOAT_EQ(plan.weight_high, 0.5f);
  EXPECT_DOUBLE_EQ(plan.frame.grid.pixel_mm, kPixelMm);
  // The centre of row 10: one row.
  ASSERT_FALSE(
      plan_refinement(axial_slice_at(3, 40, 0.6, 1, -2, (10 - 7.5) * kPixelMm, 0.4), g, &plan));
  EXPECT_EQ(plan.row_low, 10);
  EXPECT_EQ(plan.row_high, 10);
  EXPECT_FLOAT_EQ(plan.weight_high, 0.0f);
  EXPECT_NEAR(plan.frame.grid.pixel_mm, 0.6, 1e-6);  // orientations are float32
  // The last row's centre is still inside.
  EXPECT_FALSE(plan_refinement(axial_slice_at(3, 40, 0.6, 0, 0, 7.5 * kPixelMm), g, &plan));
}

TEST(RefinementPlan, RefusalsNameTheirReason) {
  const test::TestScan scan = scan_16x48();
  const ScanGeometry& g = scan.description.geometry;
  RefinementPlan plan;
  auto reason_of = [&](const SetSliceCommand& slice, const ScanGeometry& geometry) {
    const std::optional<RefinementProblem> p = plan_refinement(slice, geometry, &plan);
    return p ? p->reason + "/" + to_string(p->code) : std::string("ok");
  };
  const std::string invalid = std::string("/") + to_string(StatusCode::kInvalidArgument);
  const std::string precondition = std::string("/") + to_string(StatusCode::kFailedPrecondition);
  EXPECT_EQ(reason_of(test::oblique_slice(scan.description, 1, 32), g), "not_axial" + invalid);
  const std::array<SliceOrientation, 3> defaults = default_slices(scan.description.volume);
  EXPECT_EQ(reason_of({0, defaults[0], 32, 32}, g), "not_axial" + invalid);
  EXPECT_EQ(reason_of({2, defaults[2], 48, 24}, g), "non_square_pixels" + invalid);
  EXPECT_EQ(reason_of(axial_slice_at(3, 40, 0.5, 0, 0, 8 * kPixelMm), g),
            "slice_outside_detector" + precondition);

  const test::TestScan cone = test::make_cone_scan(2, {16, 48}, 60, 150, 100);
  EXPECT_EQ(reason_of(axial_slice_at(3, 32, 0.5, 0, 0, 0), cone.description.geometry),
            "not_parallel_beam" + precondition);

  ScanGeometry tilted = g;  // rays leaving the z = const planes (a laminography-like tilt)
  for (ProjectionVector& v : tilted.vectors)
    v.source_or_ray = v.source_or_ray + Vec3{0, 0, 0.2};
  EXPECT_EQ(reason_of(axial_slice_at(3, 32, 0.5, 0, 0, 0), tilted),
            "rays_not_in_slice_plane" + precondition);

  ScanGeometry helical = g;  // the detector rises with the angle
  for (std::size_t i = 0; i < helical.vectors.size(); ++i)
    helical.vectors[i].detector_center.z += 0.01 * static_cast<double>(i);
  EXPECT_EQ(reason_of(axial_slice_at(3, 32, 0.5, 0, 0, 0), helical),
            "slice_height_varies" + precondition);
}

TEST(RefinementPlan, SystemMatrixReproducesTheMeasuredLineIntegrals) {
  const test::TestScan scan = scan_16x48();
  CpuBackend backend(CpuBackendOptions{2, 0});
  const std::vector<SetSliceCommand> slices = {
      test::axial_slice(scan.description, 2, 48),  // centred, between two rows
      axial_slice_at(3, 44, kPixelMm, 1.5, -1.0, 2.5 * kPixelMm,
                     0.5),                                      // off-centre, rotated, on a row
      axial_slice_at(4, 60, 0.4, -0.5, 0.7, -1.0, -0.3, true),  // mirrored, finer pixels
      // Wider than high, square pixels.
      {5, SliceOrientation::from_axes({30, 0, 0}, {0, 18, 0}, {-15, -9, 0.25}), 60, 36},
  };
  for (const SetSliceCommand& slice : slices) {
    SCOPED_TRACE("slice " + std::to_string(slice.slice_id));
    RefinementPlan plan;
    ASSERT_FALSE(plan_refinement(slice, scan.description.geometry, &plan));
    const SinogramWindow window = test::phantom_sinogram(scan, plan);
    ASSERT_TRUE(window.complete());
    const RefinementSetup setup = refinement_setup(plan, scan.description.geometry);
    std::unique_ptr<SliceRefiner> refiner = backend.create_refiner(setup);
    std::vector<float> truth =
        phantom::sample(scan.phantom, slice_grid(slice.orientation, slice.width, slice.height), 3);
    const double residual = refiner->residual(truth.data(), window.values().data());
    std::printf("slice %u: ||A x_phantom - b|| / ||b|| = %.4f\n", slice.slice_id, residual);
    EXPECT_LT(residual, 0.05) << "the matrix and the measured rows disagree";
    std::vector<float> doubled = truth;
    for (float& v : doubled)
      v *= 2;
    EXPECT_NEAR(refiner->residual(doubled.data(), window.values().data()), 1.0, 0.06)
        << "a factor of two in the units shows as a residual of one";
    // CGLS from zero fits the data and approaches the phantom.
    std::vector<float> x(truth.size(), 0.0f);
    const RefinementResult r = refiner->refine(x.data(), window.values().data(), 30, x.data());
    EXPECT_EQ(r.iterations, 30);
    EXPECT_DOUBLE_EQ(r.residual_before, 1.0);
    EXPECT_LT(r.residual_after, 0.05);
    EXPECT_LT(test::relative_error(x, truth), 0.25);
  }
}

TEST(SinogramWindow, FollowsTheStoreSlotBySlot) {
  RefinementPlan plan;
  plan.row_low = 2;
  plan.row_high = 3;
  plan.weight_high = 0.25f;
  SinogramWindow window;
  window.reset(3, 2);
  CapturedRows rows{{1, 2, 3}, {9, 9, 1, 2, 5, 6}};
  const std::uint64_t v0 = window.version();
  EXPECT_TRUE(window.store(1, plan, rows));
  EXPECT_GT(window.version(), v0);
  EXPECT_FLOAT_EQ(window.values()[2], 0.75f * 1 + 0.25f * 5);
  EXPECT_FLOAT_EQ(window.values()[3], 0.75f * 2 + 0.25f * 6);
  EXPECT_EQ(window.filled(), 1);
  EXPECT_FALSE(window.complete());
  EXPECT_TRUE(window.store(0, plan, rows));
  EXPECT_TRUE(window.store(2, plan, rows));
  EXPECT_TRUE(window.complete());
  // A projection without the rows empties its slot (the store holds data the window lacks).
  EXPECT_FALSE(window.store(2, plan, CapturedRows{{1}, {7, 7}}));
  EXPECT_EQ(window.filled(), 2);
  window.clear_slot(0);
  EXPECT_EQ(window.filled(), 1);
  EXPECT_FALSE(window.store(5, plan, rows)) << "outside the window";
}

}  // namespace
}  // namespace slicestream
