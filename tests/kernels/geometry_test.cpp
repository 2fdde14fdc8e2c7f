// Geometry: ProjectionMap against an independent float64 ray/plane intersection, ASTRA's
// conventions, FDK weights, validation of every bad case, centre-of-rotation offsets.
#include "kernels/geometry.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/geometry_warnings.hpp"
#include "kernels/projection_map.hpp"
#include "tests/common/beam_kind_printer.hpp"
#include "tests/kernels/test_support.hpp"

namespace slicestream {
namespace {

using test::RandomSource;
constexpr double kPi = 3.14159265358979323846;

Vec3 random_vec(RandomSource& random, double extent) {
  return {random.uniform(-extent, extent), random.uniform(-extent, extent),
          random.uniform(-extent, extent)};
}

struct Expected {
  double col, row, den;
};

// Where the ray through X meets the detector plane, solved directly: P = a + t r with the plane
// through d spanned by u and v; then P - d = alpha u + beta v.
Expected intersect(BeamKind beam, const ProjectionVector& vec, DetectorShape detector, Vec3 x) {
  const Vec3 n = cross(vec.u, vec.v);
  const Vec3 a = beam == BeamKind::kCone ? vec.source_or_ray : x;
  const Vec3 r = beam == BeamKind::kCone ? x - vec.source_or_ray : vec.source_or_ray;
  const double t = dot(vec.detector_center - a, n) / dot(r, n);
  const Vec3 p = a + t * r - vec.detector_center;
  const double alpha = dot(cross(p, vec.v), n) / dot(n, n);
  const double beta = dot(cross(vec.u, p), n) / dot(n, n);
  double den = 1;
  if (beam == BeamKind::kCone) {
    // Magnification relative to the rotation axis: distances along the detector normal.
    den = dot(x - vec.source_or_ray, n) / dot(Vec3{} - vec.source_or_ray, n);
  }
  return {alpha + 0.5 * detector.cols - 0.5, beta + 0.5 * detector.rows - 0.5, den};
}

double evaluate(const float* coef, Vec3 x) {
  return coef[0] * x.x + coef[1] * x.y + coef[2] * x.z + static_cast<double>(coef[3]);
}

ProjectionVector random_tilted_vector(RandomSource& random, BeamKind beam) {
  CircularConeParams p;
  p.source_origin_mm = random.uniform(100, 500);
  p.origin_detector_mm = random.uniform(50, 400);
  p.pixel_width_mm = random.uniform(0.05, 0.5);
  p.pixel_height_mm = random.uniform(0.05, 0.5);
  p.detector_offset_u_mm = random.uniform(-10, 10);
  p.detector_offset_v_mm = random.uniform(-10, 10);
  const double angle = random.uniform(-kPi, kPi);
  ProjectionVector vec = beam == BeamKind::kCone
                             ? cone_vector(angle, p)
                             : parallel_vector(angle, p.pixel_width_mm, p.pixel_height_mm);
  // Tilt and skew the detector, and (parallel) make the rays oblique to it.
  vec.u = vec.u + random.uniform(-0.3, 0.3) * vec.v + 0.05 * random_vec(random, p.pixel_width_mm);
  vec.v = vec.v + 0.05 * random_vec(random, p.pixel_height_mm);
  if (beam == BeamKind::kParallel) {
    vec.source_or_ray = vec.source_or_ray + random_vec(random, 0.3);
    vec.detector_center = random_vec(random, 20);
  }
  return vec;
}

class ProjectionMapTest : public testing::TestWithParam<BeamKind> {};

TEST_P(ProjectionMapTest, MatchesAnIndependentRayPlaneIntersection) {
  const BeamKind beam = GetParam();
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape detector{random.uniform_int(50, 900), random.uniform_int(50, 900)};
  for (int trial = 0; trial < 50; ++trial) {
    const ProjectionVector vec = random_tilted_vector(random, beam);
    ASSERT_EQ(validate_geometry({beam, detector, {vec}}), "");
    const ProjectionMap map = make_projection_map(beam, vec, detector);
    for (int k = 0; k < 20; ++k) {
      const Vec3 x = random_vec(random, 40);
      const Expected expected = intersect(beam, vec, detector, x);
      const double den = evaluate(map.den_coef, x);
      // Float coefficients: compare to a few float ulps of the magnitudes involved.
      const double col_tolerance = 2e-6 * (std::abs(expected.col) + detector.cols);
      const double row_tolerance = 2e-6 * (std::abs(expected.row) + detector.rows);
      EXPECT_NEAR(den, expected.den, 1e-6 * (1 + std::abs(expected.den)));
      EXPECT_NEAR(evaluate(map.col_coef, x) / den, expected.col, col_tolerance);
      EXPECT_NEAR(evaluate(map.row_coef, x) / den, expected.row, row_tolerance);
    }
    // FDK weight: the pixel width seen at the rotation axis, inverted.
    if (beam == BeamKind::kCone) {
      const Vec3 n = cross(vec.u, vec.v);
      const double source_detector = std::abs(dot(vec.detector_center - vec.source_or_ray, n));
      const double source_axis = std::abs(dot(Vec3{} - vec.source_or_ray, n));
      EXPECT_NEAR(map.weight, source_detector / (source_axis * norm(vec.u)), 1e-6 * map.weight);
    } else {
      const Vec3 r_hat = (1.0 / norm(vec.source_or_ray)) * vec.source_or_ray;
      const Vec3 u_perp = vec.u - dot(vec.u, r_hat) * r_hat;
      EXPECT_NEAR(map.weight, 1.0 / norm(u_perp), 1e-6 * map.weight);
      EXPECT_EQ(map.den_coef[0], 0.0f);
      EXPECT_EQ(map.den_coef[3], 1.0f);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Beams, ProjectionMapTest,
                         testing::Values(BeamKind::kParallel, BeamKind::kCone),
                         [](const testing::TestParamInfo<BeamKind>& param_info) {
                           return std::string(to_string(param_info.param));
                         });

TEST(Geometry, AstraConventions) {
  // Parallel, angle 0: rays along -y, u along +x, v along +z, detector centred at the origin.
  const ProjectionVector p0 = parallel_vector(0.0, 0.5, 0.25);
  EXPECT_NEAR(p0.source_or_ray.x, 0, 1e-15);
  EXPECT_EQ(p0.source_or_ray.y, -1);
  EXPECT_EQ(p0.u.x, 0.5);
  EXPECT_EQ(p0.v.z, 0.25);
  // Angle pi/2: rays along +x (the object turns, ASTRA's sense of rotation).
  const ProjectionVector p90 = parallel_vector(kPi / 2, 1, 1);
  EXPECT_NEAR(p90.source_or_ray.x, 1, 1e-15);
  EXPECT_NEAR(p90.source_or_ray.y, 0, 1e-15);
  // Cone, angle 0: source at (0, -sod, 0), detector centre at (0, odd, 0).
  CircularConeParams c;
  c.source_origin_mm = 300;
  c.origin_detector_mm = 200;
  c.pixel_width_mm = 0.2;
  c.pixel_height_mm = 0.3;
  const ProjectionVector c0 = cone_vector(0.0, c);
  EXPECT_NEAR(c0.source_or_ray.x, 0, 1e-12);
  EXPECT_EQ(c0.source_or_ray.y, -300);
  EXPECT_EQ(c0.detector_center.y, 200);
  EXPECT_EQ(c0.u.x, 0.2);
  EXPECT_EQ(c0.v.z, 0.3);
  // Points map where ASTRA puts them: parallel col = x / pw + cols/2 - 1/2, row = z / ph + ...
  const DetectorShape detector{10, 20};
  const ProjectionMap pm = make_projection_map(BeamKind::kParallel, p0, detector);
  const Vec3 x{1.5, 7.0, -0.5};
  EXPECT_NEAR(evaluate(pm.col_coef, x), 1.5 / 0.5 + 9.5, 1e-5);
  EXPECT_NEAR(evaluate(pm.row_coef, x), -0.5 / 0.25 + 4.5, 1e-5);
  EXPECT_NEAR(pm.weight, 2.0, 1e-6);  // 1 / pixel width
  // Cone: magnification (sod + odd) / (y + sod) at depth y.
  const ProjectionMap cm = make_projection_map(BeamKind::kCone, c0, detector);
  const double den = evaluate(cm.den_coef, x);
  EXPECT_NEAR(den, (7.0 + 300) / 300, 1e-6);
  EXPECT_NEAR(evaluate(cm.col_coef, x) / den, 1.5 * 500 / 307 / 0.2 + 9.5, 1e-4);
  EXPECT_NEAR(evaluate(cm.row_coef, x) / den, -0.5 * 500 / 307 / 0.3 + 4.5, 1e-4);
  EXPECT_NEAR(cm.weight, 500.0 / (0.2 * 300), 1e-4);
  // Detector offsets move the detector within its plane.
  c.detector_offset_u_mm = 2;
  c.detector_offset_v_mm = -1;
  const ProjectionVector shifted = cone_vector(0.0, c);
  EXPECT_NEAR(shifted.detector_center.x, 2, 1e-12);
  EXPECT_NEAR(shifted.detector_center.z, -1, 1e-12);
  EXPECT_NEAR(angular_weight(180), kPi / 180, 1e-7);
}

TEST(Geometry, CircularAndVectorGeometriesAgree) {
  const DetectorShape detector{4, 6};
  CircularConeParams c;
  c.angles_rad = {0.1, 1.7, -2.0};
  c.source_origin_mm = 100;
  c.origin_detector_mm = 50;
  const ScanGeometry circular = make_cone_geometry(detector, c);
  std::vector<double> values;
  for (const ProjectionVector& v : circular.vectors) {
    for (Vec3 part : {v.source_or_ray, v.detector_center, v.u, v.v}) {
      values.insert(values.end(), {part.x, part.y, part.z});
    }
  }
  const ScanGeometry vectors = make_vector_geometry(BeamKind::kCone, detector, values);
  ASSERT_EQ(vectors.vectors.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(vectors.vectors[i].source_or_ray.y, circular.vectors[i].source_or_ray.y);
    EXPECT_EQ(vectors.vectors[i].v.z, circular.vectors[i].v.z);
  }
  EXPECT_EQ(make_parallel_geometry(detector, {{0, 1, 2, 3}, 1, 1}).vectors.size(), 4u);
}

TEST(Geometry, ValidationRejectsEachBadCase) {
  const DetectorShape detector{8, 8};
  CircularConeParams c;
  c.angles_rad = {0.0};
  c.source_origin_mm = 100;
  c.origin_detector_mm = 50;
  const ScanGeometry good_cone = make_cone_geometry(detector, c);
  const ScanGeometry good_parallel = make_parallel_geometry(detector, {{0.0, 0.5}, 1, 1});
  EXPECT_EQ(validate_geometry(good_cone), "");
  EXPECT_EQ(validate_geometry(good_parallel), "");
  c.origin_detector_mm = -40;  // a virtual detector between source and axis
  EXPECT_EQ(validate_geometry(make_cone_geometry(detector, c)), "");

  auto expect_rejected = [](ScanGeometry g, const std::string& why) {
    const std::string message = validate_geometry(g);
    EXPECT_NE(message, "") << why;
  };
  ScanGeometry g = good_cone;
  g.detector = {0, 8};
  expect_rejected(g, "no rows");
  g = good_cone;
  g.vectors.clear();
  expect_rejected(g, "no projections");
  g = good_cone;
  g.vectors[0].u.x = std::numeric_limits<double>::quiet_NaN();
  expect_rejected(g, "NaN");
  g = good_cone;
  g.vectors[0].detector_center.y = std::numeric_limits<double>::infinity();
  expect_rejected(g, "infinity");
  g = good_cone;
  g.vectors[0].v = {};
  expect_rejected(g, "zero v");
  g = good_cone;
  g.vectors[0].v = 2.0 * g.vectors[0].u;
  expect_rejected(g, "parallel u and v");
  g = good_cone;
  g.vectors[0].source_or_ray = g.vectors[0].detector_center + Vec3{3, 0, 1};  // in the plane
  expect_rejected(g, "source in the detector plane");
  g = good_cone;
  // Detector plane behind the source (origin and detector on opposite sides of the source). A
  // detector plane between source and axis is fine: ASTRA's virtual detectors do that.
  g.vectors[0].detector_center = {0, -150, 0};
  expect_rejected(g, "rotation axis behind the source");
  g = good_parallel;
  g.vectors[1].source_or_ray = g.vectors[1].u;  // ray within the detector plane
  expect_rejected(g, "ray parallel to the detector");
  g = good_parallel;
  g.vectors[1].source_or_ray = {};
  expect_rejected(g, "zero ray");
  // The message names the projection.
  EXPECT_NE(validate_geometry(g).find("projection 1"), std::string::npos);
}

TEST(Geometry, RotationAxisOffsetShiftsTheAxisProjection) {
  const DetectorShape detector{16, 40};
  CircularConeParams c;
  c.angles_rad = {0.3, 2.0};
  c.source_origin_mm = 100;
  c.origin_detector_mm = 100;
  c.pixel_width_mm = 0.5;
  for (const ScanGeometry& g :
       {make_cone_geometry(detector, c), make_parallel_geometry(detector, {{0.3, 2.0}, 0.5, 1})}) {
    const ScanGeometry shifted = with_rotation_axis_offset(g, 2.75);
    for (std::size_t i = 0; i < g.vectors.size(); ++i) {
      const ProjectionMap map = make_projection_map(g.beam, shifted.vectors[i], detector);
      // Every point of the rotation axis (x = y = 0) lands 2.75 columns right of the centre.
      for (double z : {-3.0, 0.0, 4.0}) {
        const Vec3 on_axis{0, 0, z};
        const double col = evaluate(map.col_coef, on_axis) / evaluate(map.den_coef, on_axis);
        EXPECT_NEAR(col, 19.5 + 2.75, 1e-4) << to_string(g.beam) << " z " << z;
      }
    }
  }
}

TEST(Geometry, CosineWeightIsSourceDistanceOverRayLength) {
  const DetectorShape detector{9, 11};
  CircularConeParams c;
  c.source_origin_mm = 100;
  c.origin_detector_mm = 60;
  c.pixel_width_mm = 2;
  c.pixel_height_mm = 3;
  const ProjectionVector vec = cone_vector(0.8, c);
  const CosineWeight w = make_cosine_weight(BeamKind::kCone, vec, detector);
  EXPECT_NEAR(w.at(4, 5), 1.0, 1e-6);  // the central pixel sees the source head-on
  const double dc = 10 - 5, dr = 0 - 4;
  const double expected =
      160.0 / std::sqrt(160.0 * 160 + (2 * dc) * (2 * dc) + (3 * dr) * (3 * dr));
  EXPECT_NEAR(w.at(0, 10), expected, 1e-6);
  const CosineWeight none =
      make_cosine_weight(BeamKind::kParallel, parallel_vector(0, 1, 1), detector);
  EXPECT_EQ(none.at(0, 10), 1.0f);
}

}  // namespace
}  // namespace slicestream

namespace slicestream {
namespace {

// A cone-beam source that passes through the reconstruction box is reported (naming how many
// projections and the first source position); a source outside, and parallel beam, are not.
TEST(GeometryWarning, ASourceInsideTheBoxIsReported) {
  CircularConeParams params;
  for (int i = 0; i < 8; ++i)
    params.angles_rad.push_back(i * 2 * 3.14159265358979 / 8);
  params.source_origin_mm = 50;  // the box's corners reach 60 * sqrt(2) mm from the axis
  params.origin_detector_mm = 100;
  const ScanGeometry near = make_cone_geometry({32, 32}, params);
  VolumeBox box{{-60, -60, -10}, {60, 60, 10}};
  const std::string warning = geometry_warning(near, box);
  EXPECT_NE(warning.find("inside the reconstruction box"), std::string::npos) << warning;
  EXPECT_NE(warning.find("for 8 of 8 projections"), std::string::npos) << warning;

  // The source circle (50 mm) passes outside a box of +-34 mm (35.4 mm at 45 degrees), and
  // through one of +-55 x +-30 mm only on the x axis.
  box = VolumeBox{{-34, -34, -10}, {34, 34, 10}};
  EXPECT_EQ(geometry_warning(near, box), "");
  box = VolumeBox{{-55, -30, -10}, {55, 30, 10}};
  EXPECT_NE(geometry_warning(near, box).find("for 2 of 8 projections"), std::string::npos)
      << geometry_warning(near, box);

  params.source_origin_mm = 500;
  EXPECT_EQ(geometry_warning(make_cone_geometry({32, 32}, params), box), "");
  CircularParallelParams parallel;
  parallel.angles_rad = params.angles_rad;
  EXPECT_EQ(geometry_warning(make_parallel_geometry({32, 32}, parallel), box), "");
}

}  // namespace
}  // namespace slicestream
