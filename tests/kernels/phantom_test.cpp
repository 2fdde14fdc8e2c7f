// The analytic ellipsoid phantom: exact chords, orientation convention, the box scaling of the
// modified Shepp-Logan table, project() and sample() with supersampling.
#include "kernels/phantom/ellipsoid_phantom.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "tests/kernels/test_support.hpp"

namespace slicestream::phantom {
namespace {

using test::RandomSource;
constexpr double kPi = 3.14159265358979323846;

Vec3 random_point(RandomSource& random, double extent) {
  return {random.uniform(-extent, extent), random.uniform(-extent, extent),
          random.uniform(-extent, extent)};
}

TEST(EllipsoidPhantom, SphereChordsAreExact) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const Ellipsoid sphere{{1, 2, 3}, {5, 5, 5}, 0, 0, 0, 0.5};
  for (int i = 0; i < 100; ++i) {
    const Vec3 direction = random_point(random, 1);
    const Vec3 point = Vec3{1, 2, 3} + random_point(random, 6);
    // Distance of the line from the centre.
    const Vec3 to_center = Vec3{1, 2, 3} - point;
    const Vec3 unit = (1.0 / norm(direction)) * direction;
    const Vec3 closest = to_center - dot(to_center, unit) * unit;
    const double d = norm(closest);
    const double expected = d < 5 ? 0.5 * 2 * std::sqrt(25 - d * d) : 0.0;
    // Any point on the line and any length of the direction give the same integral.
    EXPECT_NEAR(line_integral({sphere}, point, direction), expected, 1e-12);
    EXPECT_NEAR(line_integral({sphere}, point + 7.0 * direction, -3.0 * direction), expected,
                1e-12);
  }
}

// Brute-force midpoint integration of value_at along a line, for rotated ellipsoids.
double numeric_integral(const std::vector<Ellipsoid>& phantom, Vec3 point, Vec3 direction,
                        double half_length, int samples) {
  const Vec3 unit = (1.0 / norm(direction)) * direction;
  const double step = 2 * half_length / samples;
  double sum = 0;
  for (int s = 0; s < samples; ++s) {
    sum += value_at(phantom, point + (-half_length + (s + 0.5) * step) * unit);
  }
  return sum * step;
}

TEST(EllipsoidPhantom, RotatedEllipsoidChordsMatchNumericIntegration) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const std::vector<Ellipsoid> phantom = {
      {{0.5, -1, 0.2}, {4, 2, 1}, 0.4, 0.9, -0.3, 1.0},
      {{-0.5, 0.5, 0}, {1.5, 3, 2}, -1.1, 0.2, 2.0, -0.25},
  };
  for (int i = 0; i < 10; ++i) {
    const Vec3 point = random_point(random, 1.5);
    const Vec3 direction = random_point(random, 1);
    const double exact = line_integral(phantom, point, direction);
    const double numeric = numeric_integral(phantom, point, direction, 12, 100000);
    EXPECT_NEAR(exact, numeric, 2e-3) << i;  // midpoint rule across the surface jumps
  }
}

TEST(EllipsoidPhantom, EulerAnglesFollowTheDocumentedConvention) {
  // phi = 90 degrees turns the first axis (length 4) from x to y.
  const Ellipsoid e{{0, 0, 0}, {4, 1, 1}, kPi / 2, 0, 0, 1.0};
  EXPECT_EQ(value_at({e}, {0, 3.9, 0}), 1.0);
  EXPECT_EQ(value_at({e}, {3.9, 0, 0}), 0.0);
  // theta = 90 degrees then turns the second axis (length 2) from y... to z: Rz(0) Rx(90) maps
  // (0, 1, 0) to (0, 0, 1).
  const Ellipsoid f{{0, 0, 0}, {1, 2, 0.5}, 0, kPi / 2, 0, 1.0};
  EXPECT_EQ(value_at({f}, {0, 0, 1.9}), 1.0);
  EXPECT_EQ(value_at({f}, {0, 1.9, 0}), 0.0);
  // psi = 90 degrees with phi = theta = 0 is again a turn about z.
  const Ellipsoid g{{0, 0, 0}, {4, 1, 1}, 0, 0, kPi / 2, 1.0};
  EXPECT_EQ(value_at({g}, {0, 3.9, 0}), 1.0);
}

// The modified Shepp-Logan table in unit coordinates (the specification, re-stated here).
double unit_shepp_logan(Vec3 p) {
  struct E {
    double a, sx, sy, sz, x, y, z, angle_deg;
  };
  const E table[] = {
      {1.0, .69, .92, .81, 0, 0, 0, 0},       {-0.8, .6624, .874, .78, 0, -.0184, 0, 0},
      {-0.2, .11, .31, .22, .22, 0, 0, -8},   {-0.2, .16, .41, .28, -.22, 0, 0, 28},
      {0.1, .21, .25, .41, 0, .35, -.15, 0},  {0.1, .046, .046, .05, 0, .1, .25, 0},
      {0.1, .046, .046, .05, 0, -.1, .25, 0}, {0.1, .046, .023, .05, -.08, -.605, 0, 0},
      {0.1, .023, .023, .02, 0, -.606, 0, 0}, {0.1, .023, .046, .02, .06, -.605, 0, 0},
  };
  double value = 0;
  for (const E& e : table) {
    const double c = std::cos(e.angle_deg * kPi / 180), s = std::sin(e.angle_deg * kPi / 180);
    const double dx = p.x - e.x, dy = p.y - e.y, dz = p.z - e.z;
    const double u = c * dx + s * dy, v = -s * dx + c * dy;
    if ((u / e.sx) * (u / e.sx) + (v / e.sy) * (v / e.sy) + (dz / e.sz) * (dz / e.sz) <= 1) {
      value += e.a;
    }
  }
  return value;
}

TEST(EllipsoidPhantom, SheppLoganIsTheUnitTableStretchedIntoTheBox) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  // An anisotropic box: the tilted ellipses must be re-diagonalised, not just scaled.
  const VolumeBox box{{-30, 10, -5}, {50, 70, 15}};
  const std::vector<Ellipsoid> phantom = shepp_logan_3d(box, 0.05);
  ASSERT_EQ(phantom.size(), 10u);
  const Vec3 center = box.center();
  const Vec3 half = 0.45 * box.extent();
  int mismatches = 0;
  for (int i = 0; i < 20000; ++i) {
    const Vec3 unit = random_point(random, 1.0);
    const Vec3 world{center.x + half.x * unit.x, center.y + half.y * unit.y,
                     center.z + half.z * unit.z};
    const double expected = 0.05 * unit_shepp_logan(unit);
    // Points within rounding of a surface may fall either way.
    if (std::abs(value_at(phantom, world) - expected) > 1e-12) ++mismatches;
  }
  EXPECT_LE(mismatches, 2);
  EXPECT_NEAR(value_at(phantom, center), 0.2 * 0.05, 1e-15);  // the "brain"
  EXPECT_EQ(value_at(phantom, box.max_mm), 0.0);
  EXPECT_THROW(shepp_logan_3d({{0, 0, 0}, {1, 0, 1}}), std::invalid_argument);
}

TEST(EllipsoidPhantom, ProjectAveragesLineIntegralsOverEachPixel) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const VolumeBox box{{-20, -20, -15}, {20, 20, 15}};
  const std::vector<Ellipsoid> phantom = shepp_logan_3d(box);
  const DetectorShape detector{12, 17};
  CircularConeParams params;
  params.source_origin_mm = 100;
  params.origin_detector_mm = 50;
  params.pixel_width_mm = 3;
  params.pixel_height_mm = 3.5;
  params.detector_offset_u_mm = 1.3;
  const double angle = random.uniform(0, 2 * kPi);
  for (BeamKind beam : {BeamKind::kParallel, BeamKind::kCone}) {
    const ProjectionVector vec =
        beam == BeamKind::kCone ? cone_vector(angle, params) : parallel_vector(angle, 2.5, 2.5);
    std::vector<float> single(detector.pixels()), super(detector.pixels(), -1.0f);
    project(phantom, beam, vec, detector, single.data());
    project(phantom, beam, vec, detector, super.data(), 3, 4, 9);  // rows 4..8 only
    for (int r = 0; r < detector.rows; ++r) {
      for (int c = 0; c < detector.cols; ++c) {
        const std::size_t i = static_cast<std::size_t>(r * detector.cols + c);
        auto integral_at = [&](double dc, double dr) {
          const Vec3 pixel = vec.detector_center + (c - 8.0 + dc) * vec.u + (r - 5.5 + dr) * vec.v;
          return beam == BeamKind::kCone
                     ? line_integral(phantom, vec.source_or_ray, pixel - vec.source_or_ray)
                     : line_integral(phantom, pixel, vec.source_or_ray);
        };
        EXPECT_NEAR(single[i], integral_at(0, 0), 1e-6);
        if (r < 4 || r >= 9) {
          EXPECT_EQ(super[i], -1.0f);
          continue;
        }
        double mean = 0;
        for (double dr : {-1.0 / 3, 0.0, 1.0 / 3}) {
          for (double dc : {-1.0 / 3, 0.0, 1.0 / 3})
            mean += integral_at(dc, dr) / 9;
        }
        EXPECT_NEAR(super[i], mean, 1e-6);
      }
    }
    // The centre ray of the parallel beam crosses the phantom: sanity of the magnitude.
    EXPECT_GT(*std::max_element(single.begin(), single.end()), 0.1f);
  }
  std::vector<float> out(detector.pixels());
  EXPECT_THROW(project(phantom, BeamKind::kCone, cone_vector(0, params), detector, out.data(), 0),
               std::invalid_argument);
  EXPECT_THROW(
      project(phantom, BeamKind::kCone, cone_vector(0, params), detector, out.data(), 1, 5, 13),
      std::invalid_argument);
}

TEST(EllipsoidPhantom, SampleAveragesOverEachCell) {
  const std::vector<Ellipsoid> sphere = {{{0, 0, 0}, {1, 1, 1}, 0, 0, 0, 2.0}};
  // A 2 x 2 slice over [-1, 1]^2 in the z = 0 plane: every cell is a quarter of the disc's box.
  const GridSpec slice =
      slice_grid(SliceOrientation::from_axes({2, 0, 0}, {0, 2, 0}, {-1, -1, 0}), 2, 2);
  const std::vector<float> centers = sample(sphere, slice, 1);
  for (float v : centers)
    EXPECT_EQ(v, 2.0f);  // cell centres (+-0.5, +-0.5) are inside
  // With many sub-samples a cell holds the disc's quarter area pi/4 of its unit area.
  const std::vector<float> fine = sample(sphere, slice, 64);
  for (float v : fine)
    EXPECT_NEAR(v, 2.0 * kPi / 4, 6e-3);  // 64^2 points: O(1/64) edge error
  // A volume grid averages over depth too: the ball fills pi/6 of its bounding cube.
  const GridSpec volume = volume_grid({{-1, -1, -1}, {1, 1, 1}}, 1, 1, 1);
  EXPECT_NEAR(sample(sphere, volume, 48)[0], 2.0 * kPi / 6, 1e-2);
  EXPECT_THROW(sample(sphere, slice, 0), std::invalid_argument);
}

}  // namespace
}  // namespace slicestream::phantom
