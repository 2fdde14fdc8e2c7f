// Which slices can be refined and how (refinement_plan.hpp), the sinogram window, and the CPU
// refiner's units: for axial slices of a parallel-beam scan (centred, off-centre and rotated,
// mirrored, between two detector rows or on one) and for the central slice of a cone-beam scan
// (a fan-beam problem), the system matrix applied to the phantom sampled on the slice reproduces
// the measured line integrals of the slice's detector row(s): attenuation per mm times chord
// lengths in mm.
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "pipeline/refinement/refinement_plan.hpp"
#include "pipeline/refinement/sinogram_window.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

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

  // Cone beam: only the slice in the source plane (z = 0) is a 2D (fan-beam) problem.
  const test::TestScan cone = test::make_cone_scan(2, {16, 48}, 60, 150, 100);
  const ScanGeometry& c = cone.description.geometry;
  EXPECT_EQ(reason_of(axial_slice_at(3, 32, 0.5, 0, 0, 0), c), "ok");
  EXPECT_EQ(reason_of(axial_slice_at(3, 32, 0.5, 2, -1, 0, 0.7), c), "ok");
  EXPECT_EQ(reason_of(axial_slice_at(3, 32, 0.5, 0, 0, 0.5), c),
            "not_central_slice" + precondition);
  ScanGeometry helix = c;  // the source rises with the angle: no plane holds every fan
  for (std::size_t i = 0; i < helix.vectors.size(); ++i) {
    helix.vectors[i].source_or_ray.z += 0.01 * static_cast<double>(i);
    helix.vectors[i].detector_center.z += 0.01 * static_cast<double>(i);
  }
  EXPECT_EQ(reason_of(axial_slice_at(3, 32, 0.5, 0, 0, 0), helix),
            "not_central_slice" + precondition);
  ScanGeometry rolled = c;  // detector rows not horizontal
  for (ProjectionVector& v : rolled.vectors)
    v.u = v.u + Vec3{0, 0, 0.05};
  EXPECT_EQ(reason_of(axial_slice_at(3, 32, 0.5, 0, 0, 0), rolled),
            "rays_not_in_slice_plane" + precondition);

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
    const double estimate = static_cast<double>(estimated_matrix_bytes(setup));
    EXPECT_GT(estimate, 0.9 * static_cast<double>(refiner->matrix_bytes()));
    EXPECT_LT(estimate, 2.0 * static_cast<double>(refiner->matrix_bytes()));
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
    const RefinementResult r = refiner->refine(
        x.data(), window.values().data(), RefinementRequest{30, plain_cgls_settings()}, x.data());
    EXPECT_EQ(r.iterations, 30);
    EXPECT_DOUBLE_EQ(r.residual_before, 1.0);
    EXPECT_LT(r.residual_after, 0.05);
    EXPECT_LT(test::relative_error(x, truth), 0.25);
  }
}

// The central slice of a circular cone-beam scan as a fan-beam problem: the 2D geometry is the
// scan's fan (source 150 mm from the rotation axis, detector 250 mm from the source, 1 mm
// columns) seen from the slice's own frame, and the distance-driven projection of the phantom
// sampled on the slice reproduces the detector row the analytic 3D cone projector gives in the
// source plane, for centred, off-centre and rotated, and mirrored slices; with an odd row count
// (a row in the plane) and an even one (two rows interpolated).
TEST(RefinementPlan, ConeBeamCentralSliceIsAFanBeamProblem) {
  CpuBackend backend(CpuBackendOptions{2, 0});
  for (const int rows : {17, 16}) {
    const test::TestScan scan = test::make_cone_scan(3, {rows, 64}, 90, 150, 100);
    const ScanGeometry& g = scan.description.geometry;
    const std::vector<SetSliceCommand> slices = {
        test::axial_slice(scan.description, 2, 48),  // the box's central plane
        // Off-centre and rotated, mirrored: still covering the phantom (radius 15.4 mm).
        axial_slice_at(3, 48, 0.8, 2, -1.5, 0, 0.5),
        axial_slice_at(4, 50, 0.8, -1, 1.5, 0, -0.3, true),
    };
    for (const SetSliceCommand& slice : slices) {
      SCOPED_TRACE(std::to_string(rows) + " rows, slice " + std::to_string(slice.slice_id));
      RefinementPlan plan;
      ASSERT_FALSE(plan_refinement(slice, g, &plan));
      EXPECT_DOUBLE_EQ(plan.detector_row, (rows - 1) / 2.0) << "the row at the source height";
      const RefinementSetup setup = refinement_setup(plan, g);
      ASSERT_EQ(setup.geometry.beam, BeamKind::kCone);
      ASSERT_EQ(setup.geometry.bins, 64);
      const AxialSliceFrame& f = plan.frame;
      const tensorcore::Vec2 axis{-tensorcore::dot(f.center, f.x_axis),
                                  -tensorcore::dot(f.center, f.y_axis)};  // world origin
      for (const tensorcore::ProjectionVector2d& v : setup.geometry.vectors) {
        const tensorcore::Vec2 to_axis = axis - v.source_or_ray;
        EXPECT_NEAR(std::sqrt(tensorcore::dot(to_axis, to_axis)), 150, 1e-9);
        const double bin_mm = std::sqrt(tensorcore::dot(v.u, v.u));
        EXPECT_NEAR(bin_mm, 1.0, 1e-12);
        const double source_detector =
            std::abs(tensorcore::cross((1 / bin_mm) * v.u, v.detector_center - v.source_or_ray));
        EXPECT_NEAR(source_detector, 250, 1e-9);
      }
      const SinogramWindow window = test::phantom_sinogram(scan, plan);
      ASSERT_TRUE(window.complete());
      std::unique_ptr<SliceRefiner> refiner = backend.create_refiner(setup);
      // The size estimate the limits use holds for a fan too (within the fp32 CSR's row pointers).
      const double estimate = static_cast<double>(estimated_matrix_bytes(setup));
      EXPECT_GT(estimate, 0.9 * static_cast<double>(refiner->matrix_bytes()));
      EXPECT_LT(estimate, 2.0 * static_cast<double>(refiner->matrix_bytes()));
      std::vector<float> truth = phantom::sample(
          scan.phantom, slice_grid(slice.orientation, slice.width, slice.height), 3);
      const double residual = refiner->residual(truth.data(), window.values().data());
      std::printf("%d rows, slice %u: ||A x_phantom - b|| / ||b|| = %.4f\n", rows, slice.slice_id,
                  residual);
      EXPECT_LT(residual, 0.03) << "the fan-beam matrix and the cone projection disagree";
      for (float& v : truth)
        v *= 2;
      EXPECT_NEAR(refiner->residual(truth.data(), window.values().data()), 1.0, 0.06);
    }
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
  const CosineWeight parallel{};  // parallel beam: no pre-weight
  const std::uint64_t v0 = window.version();
  EXPECT_TRUE(window.store(1, plan, rows, parallel));
  EXPECT_GT(window.version(), v0);
  EXPECT_FLOAT_EQ(window.values()[2], 0.75f * 1 + 0.25f * 5);
  EXPECT_FLOAT_EQ(window.values()[3], 0.75f * 2 + 0.25f * 6);
  EXPECT_EQ(window.filled(), 1);
  EXPECT_FALSE(window.complete());
  EXPECT_TRUE(window.store(0, plan, rows, parallel));
  EXPECT_TRUE(window.store(2, plan, rows, parallel));
  EXPECT_TRUE(window.complete());
  // A projection without the rows empties its slot (the store holds data the window lacks).
  EXPECT_FALSE(window.store(2, plan, CapturedRows{{1}, {7, 7}}, parallel));
  EXPECT_EQ(window.filled(), 2);
  window.clear_slot(0);
  EXPECT_EQ(window.filled(), 1);
  EXPECT_FALSE(window.store(5, plan, rows, parallel)) << "outside the window";

  // Cone beam: preprocessing multiplied every pixel by the FDK cosine weight; the window divides
  // it out again and holds the line integrals.
  const DetectorShape detector{6, 2};
  CircularConeParams cone;
  cone.angles_rad = {0.3};
  cone.source_origin_mm = 20;
  cone.origin_detector_mm = 10;
  cone.pixel_width_mm = 20;  // a wide fan: weights well below 1 at the edges
  const ProjectionVector vector = make_cone_geometry(detector, cone).vectors[0];
  const CosineWeight fdk = make_cosine_weight(BeamKind::kCone, vector, detector);
  CapturedRows weighted = rows;
  for (std::size_t k = 0; k < weighted.rows.size(); ++k) {
    for (int col = 0; col < 2; ++col)
      weighted.values[2 * k + static_cast<std::size_t>(col)] *= fdk.at(weighted.rows[k], col);
  }
  EXPECT_LT(fdk.at(2, 0), 0.96f);
  EXPECT_TRUE(window.store(0, plan, weighted, fdk));
  EXPECT_FLOAT_EQ(window.values()[0], 0.75f * 1 + 0.25f * 5);
  EXPECT_FLOAT_EQ(window.values()[1], 0.75f * 2 + 0.25f * 6);
}

}  // namespace
}  // namespace slicestream
