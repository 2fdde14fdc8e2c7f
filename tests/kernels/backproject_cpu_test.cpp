// Voxel-driven backprojection against a float64 reference on random geometries and oblique grids,
// the dot-product test against its exact transpose (a bilinear splat), and the handling of
// points behind the source and samples beyond the detector edge.
#include "kernels/cpu/backproject_cpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/geometry.hpp"
#include "kernels/projection_map.hpp"
#include "tests/common/beam_kind_printer.hpp"
#include "tests/kernels/test_support.hpp"

namespace slicestream::cpu {
namespace {

using test::RandomSource;

struct Projection {
  std::vector<float> data;
  ProjectionMap map;
};

struct DetectorPoint {
  double col, row, den;
};

double affine(const float* coef, Vec3 p) {
  return static_cast<double>(coef[0]) * p.x + static_cast<double>(coef[1]) * p.y +
         static_cast<double>(coef[2]) * p.z + static_cast<double>(coef[3]);
}

DetectorPoint to_detector(const ProjectionMap& map, Vec3 p) {
  const double den = affine(map.den_coef, p);
  return {affine(map.col_coef, p) / den, affine(map.row_coef, p) / den, den};
}

Vec3 grid_point(const GridSpec& g, int i, int j, int k) {
  return to_vec3(g.base) + ((i + 0.5) / g.width) * to_vec3(g.x_axis) +
         ((j + 0.5) / g.height) * to_vec3(g.y_axis) + ((k + 0.5) / g.depth) * to_vec3(g.z_axis);
}

// The four bilinear taps of (col, row) that lie on the detector, with their weights.
template <class Visit>
void for_each_tap(DetectorShape d, double col, double row, const Visit& visit) {
  const double c0 = std::floor(col), r0 = std::floor(row);
  const double fc = col - c0, fr = row - r0;
  const double weights[2][2] = {{(1 - fr) * (1 - fc), (1 - fr) * fc}, {fr * (1 - fc), fr * fc}};
  for (int dr = 0; dr < 2; ++dr) {
    for (int dc = 0; dc < 2; ++dc) {
      const double r = r0 + dr, c = c0 + dc;
      if (r >= 0 && r < d.rows && c >= 0 && c < d.cols) {
        visit(static_cast<std::size_t>(r) * static_cast<std::size_t>(d.cols) +
                  static_cast<std::size_t>(c),
              weights[dr][dc]);
      }
    }
  }
}

// BP in float64: x += scale * sum_p weight * bilinear / den^2, den <= 0 contributes nothing.
std::vector<double> reference_backprojection(const GridSpec& g, DetectorShape d,
                                             const std::vector<Projection>& projections,
                                             double scale) {
  std::vector<double> x(g.points(), 0.0);
  for (int k = 0; k < g.depth; ++k) {
    for (int j = 0; j < g.height; ++j) {
      for (int i = 0; i < g.width; ++i) {
        double sum = 0;
        for (const Projection& p : projections) {
          const DetectorPoint q = to_detector(p.map, grid_point(g, i, j, k));
          if (!(q.den > 0)) continue;
          double value = 0;
          for_each_tap(d, q.col, q.row,
                       [&](std::size_t idx, double w) { value += w * p.data[idx]; });
          sum += p.map.weight * value / (q.den * q.den);
        }
        x[(static_cast<std::size_t>(k) * g.height + j) * g.width + i] = scale * sum;
      }
    }
  }
  return x;
}

// The exact transpose of the BP above: every grid value spreads over the taps it reads.
std::vector<double> splat(const GridSpec& g, DetectorShape d, const ProjectionMap& map,
                          const std::vector<double>& x, double scale) {
  std::vector<double> y(d.pixels(), 0.0);
  for (int k = 0; k < g.depth; ++k) {
    for (int j = 0; j < g.height; ++j) {
      for (int i = 0; i < g.width; ++i) {
        const DetectorPoint q = to_detector(map, grid_point(g, i, j, k));
        if (!(q.den > 0)) continue;
        const double value = x[(static_cast<std::size_t>(k) * g.height + j) * g.width + i] * scale *
                             map.weight / (q.den * q.den);
        for_each_tap(d, q.col, q.row, [&](std::size_t idx, double w) { y[idx] += w * value; });
      }
    }
  }
  return y;
}

std::vector<float> run_backprojection(const GridSpec& g, DetectorShape d,
                                      const std::vector<Projection>& projections, float scale,
                                      std::vector<float> target) {
  std::vector<ProjectionRef> refs;
  for (const Projection& p : projections)
    refs.push_back({p.data.data(), p.map});
  for (int k = 0; k < g.depth; ++k) {
    // Two row ranges per plane, as two workers would split it.
    const int split = g.height / 2;
    backproject_rows(g, d, refs.data(), static_cast<int>(refs.size()), scale, target.data(), k, 0,
                     split);
    backproject_rows(g, d, refs.data(), static_cast<int>(refs.size()), scale, target.data(), k,
                     split, g.height);
  }
  return target;
}

Vec3 random_unit(RandomSource& random) {
  const double z = random.uniform(-1, 1);
  const double phi = random.uniform(0, 6.283185307179586);
  const double r = std::sqrt(1 - z * z);
  return {r * std::cos(phi), r * std::sin(phi), z};
}

// A circular-scan vector with a tilted detector (u and v rotated about the ray by a few degrees,
// v leaning out of the detector plane) and random offsets.
ProjectionVector random_vector(RandomSource& random, BeamKind beam) {
  CircularConeParams p;
  p.source_origin_mm = random.uniform(80, 150);
  p.origin_detector_mm = random.uniform(20, 80);
  p.pixel_width_mm = random.uniform(0.8, 1.6);
  p.pixel_height_mm = random.uniform(0.8, 1.6);
  p.detector_offset_u_mm = random.uniform(-4, 4);
  p.detector_offset_v_mm = random.uniform(-4, 4);
  const double angle = random.uniform(0, 6.283185307179586);
  ProjectionVector vec = beam == BeamKind::kCone
                             ? cone_vector(angle, p)
                             : parallel_vector(angle, p.pixel_width_mm, p.pixel_height_mm);
  const double tilt = random.uniform(-0.1, 0.1);
  vec.u = vec.u + tilt * vec.v;
  vec.v = vec.v + random.uniform(-0.1, 0.1) * vec.u;
  if (beam == BeamKind::kParallel) {
    vec.detector_center = {random.uniform(-3, 3), random.uniform(-3, 3), random.uniform(-3, 3)};
    vec.source_or_ray = vec.source_or_ray + 0.1 * random_unit(random);  // oblique rays
  }
  return vec;
}

// An oblique grid around the origin, `size_mm` across (larger than the detector's field of view
// makes part of it project beyond the detector).
GridSpec random_grid(RandomSource& random, int depth, double size_mm) {
  GridSpec g;
  const double size = size_mm;
  const Vec3 x_hat = random_unit(random);
  Vec3 y_hat = random_unit(random);
  y_hat = y_hat - dot(y_hat, x_hat) * x_hat;  // a square, never a degenerate sliver
  const Vec3 x = size * x_hat;
  const Vec3 y = (size / norm(y_hat)) * y_hat;
  const Vec3 z = depth > 1 ? 0.3 * size * random_unit(random) : Vec3{};
  const Vec3 base = -0.5 * (x + y + z) + Vec3{random.uniform(-5, 5), random.uniform(-5, 5), 0};
  g.base = to_float3(base);
  g.x_axis = to_float3(x);
  g.y_axis = to_float3(y);
  g.z_axis = to_float3(z);
  g.width = random.uniform_int(20, 70);
  g.height = random.uniform_int(10, 40);
  g.depth = depth;
  return g;
}

// What the projections see of a grid: the smallest depth (den: 1 on the rotation axis, 0 at the
// source's plane) of a point some detector sees, and the points every detector misses by more
// than half a pixel (so that float and double agree on the miss).
struct GridCoverage {
  double smallest_depth_seen = std::numeric_limits<double>::infinity();
  std::vector<char> missed_by_all;  // char: vector<bool> trips -Wnull-dereference
  std::size_t missed_count = 0;
};

bool clearly_off(DetectorShape d, const DetectorPoint& q) {
  return !(q.den > 0) || q.col < -1.5 || q.col > d.cols + 0.5 || q.row < -1.5 ||
         q.row > d.rows + 0.5;
}

GridCoverage coverage(const GridSpec& g, DetectorShape d,
                      const std::vector<Projection>& projections) {
  GridCoverage c;
  c.missed_by_all.assign(g.points(), 1);
  std::size_t index = 0;
  for (int k = 0; k < g.depth; ++k) {
    for (int j = 0; j < g.height; ++j) {
      for (int i = 0; i < g.width; ++i, ++index) {
        for (const Projection& p : projections) {
          const DetectorPoint q = to_detector(p.map, grid_point(g, i, j, k));
          bool seen = false;
          for_each_tap(d, q.col, q.row, [&](std::size_t, double) { seen = true; });
          if (q.den > 0 && seen) c.smallest_depth_seen = std::min(c.smallest_depth_seen, q.den);
          if (!clearly_off(d, q)) c.missed_by_all[index] = 0;
        }
        c.missed_count += c.missed_by_all[index] != 0;
      }
    }
  }
  return c;
}

// A drawn grid and what the projections see of it.
struct SeenGrid {
  GridSpec grid;
  GridCoverage coverage;
};

// A random grid (see random_grid) that the detectors partly see and partly miss, with the points
// they see at no more than 4x the magnification of the rotation axis. Closer to the source, the
// float rounding of a detector coordinate grows as 1/den and the sample's weight as 1/den^2: one
// such point then outweighs the rest of the grid and the error measure says nothing about the
// others. Objects on a real scanner sit near the axis; points behind the source have a test of
// their own.
SeenGrid random_partly_seen_grid(RandomSource& random, int depth, double size_mm, DetectorShape d,
                                 const std::vector<Projection>& projections) {
  for (;;) {
    SeenGrid drawn{random_grid(random, depth, size_mm), {}};
    drawn.coverage = coverage(drawn.grid, d, projections);
    const GridCoverage& c = drawn.coverage;
    if (c.smallest_depth_seen >= 0.25 && c.missed_count > 0 &&
        c.missed_count < drawn.grid.points()) {
      return drawn;
    }
  }
}

class BackprojectCpu : public testing::TestWithParam<BeamKind> {};

TEST_P(BackprojectCpu, MatchesFloat64ReferenceOnRandomGeometryAndObliqueGrids) {
  const BeamKind beam = GetParam();
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape detector{random.uniform_int(20, 50), random.uniform_int(30, 60)};
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<Projection> projections;
    for (int p = 0; p < 5; ++p) {
      projections.push_back({random.floats(detector.pixels(), -1, 2),
                             make_projection_map(beam, random_vector(random, beam), detector)});
    }
    // Twice the detector's extent: corners miss every projection, the centre is seen by all
    // (or, where the grid's plane lies along the rays, another grid is drawn).
    const SeenGrid seen = random_partly_seen_grid(random, 1 + trial % 3, 2.0 * 1.6 * detector.cols,
                                                  detector, projections);
    const GridSpec& grid = seen.grid;
    const std::vector<float> initial = random.floats(grid.points(), -1, 1);
    const float scale = static_cast<float>(random.uniform(0.5, 2));
    const auto out = run_backprojection(grid, detector, projections, scale, initial);
    std::vector<double> ref = reference_backprojection(grid, detector, projections, scale);
    std::vector<double> added(out.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      added[i] = out[i] - initial[i];
    // Typically 3e-6. Random pixels change by up to 3 from one pixel to the next, so the float
    // rounding of a detector coordinate (1e-5 of a pixel where the magnification is 3-4x) shows
    // up to 1e-4 at a point; the tail over 64000 draws reached 5.4e-5 of the whole grid.
    EXPECT_LT(test::relative_error(added, ref), 1e-4) << "trial " << trial;
    // Points every detector misses keep their value exactly.
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (seen.coverage.missed_by_all[i]) {
        ASSERT_EQ(out[i], initial[i]) << "point " << i;
      }
    }
  }
}

TEST_P(BackprojectCpu, IsTheTransposeOfTheBilinearSplat) {
  const BeamKind beam = GetParam();
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape detector{31, 47};
  for (int trial = 0; trial < 3; ++trial) {
    const ProjectionMap map = make_projection_map(beam, random_vector(random, beam), detector);
    const GridSpec grid = random_grid(random, 2, random.uniform(30, 60));
    const std::vector<float> y = random.floats(detector.pixels(), -1, 1);
    const std::vector<float> x = random.floats(grid.points(), -1, 1);
    const float scale = 0.7f;
    // <B y, x>
    const auto by = run_backprojection(grid, detector, {{y, map}}, scale,
                                       std::vector<float>(grid.points(), 0.0f));
    double lhs = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      lhs += static_cast<double>(by[i]) * x[i];
    // <y, B^T x>
    const std::vector<double> x_double(x.begin(), x.end());
    const std::vector<double> btx = splat(grid, detector, map, x_double, scale);
    double rhs = 0, magnitude = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      rhs += y[i] * btx[i];
      magnitude += std::abs(y[i] * btx[i]);
    }
    ASSERT_GT(magnitude, 0.0);
    // Float32 BP against the float64 transpose: agreement to float rounding of the terms.
    EXPECT_NEAR(lhs, rhs, 1e-5 * magnitude) << "trial " << trial;
  }
}

INSTANTIATE_TEST_SUITE_P(Beams, BackprojectCpu,
                         testing::Values(BeamKind::kParallel, BeamKind::kCone),
                         [](const testing::TestParamInfo<BeamKind>& param_info) {
                           return std::string(to_string(param_info.param));
                         });

// A parallel beam along -y onto a 4 x 6 detector of ones: a grid row along x that crosses the
// detector edge reads the zero border, so values ramp 0 -> 1 over the last pixel.
TEST(BackprojectCpuEdges, SamplesBeyondTheDetectorReadZero) {
  const DetectorShape detector{4, 6};
  const std::vector<float> ones(detector.pixels(), 1.0f);
  const ProjectionMap map =
      make_projection_map(BeamKind::kParallel, parallel_vector(0.0, 1.0, 1.0), detector);
  // Detector column c is centred at x = c - 2.5; a grid row from x = -5 to 5 in steps of 0.25.
  GridSpec grid;
  grid.base = {-5.125f, 0.0f, -0.5f};
  grid.x_axis = {10.0f, 0.0f, 0.0f};
  grid.y_axis = {0.0f, 0.0f, 1.0f};
  grid.width = 40;
  grid.height = 1;
  const ProjectionRef ref{ones.data(), map};
  std::vector<float> target(40, 0.0f);
  backproject_rows(grid, detector, &ref, 1, 1.0f, target.data(), 0, 0, 1);
  for (int i = 0; i < 40; ++i) {
    const double x = -5.0 + 0.25 * i;
    const double col = x + 2.5;  // continuous column index
    double expected = 1.0;
    if (col <= -1 || col >= 6) {
      expected = 0.0;
    } else if (col < 0) {
      expected = 1.0 + col;
    } else if (col > 5) {
      expected = 6.0 - col;
    }
    EXPECT_NEAR(target[static_cast<std::size_t>(i)], expected, 1e-6) << "x = " << x;
  }
}

// A cone-beam grid reaching behind the source: those points contribute nothing, points between
// source and detector do.
TEST(BackprojectCpuEdges, PointsBehindTheSourceContributeNothing) {
  const DetectorShape detector{64, 64};
  const std::vector<float> ones(detector.pixels(), 1.0f);
  CircularConeParams p;
  p.source_origin_mm = 50;
  p.origin_detector_mm = 50;
  p.pixel_width_mm = 4;
  p.pixel_height_mm = 4;
  const ProjectionMap map = make_projection_map(BeamKind::kCone, cone_vector(0.0, p), detector);
  // Source at (0, -50, 0); a grid line along y from -150 to 50 through the axis.
  GridSpec grid;
  grid.base = {0.0f, -150.0f, -0.5f};
  grid.x_axis = {0.0f, 200.0f, 0.0f};
  grid.y_axis = {0.0f, 0.0f, 1.0f};
  grid.width = 200;
  grid.height = 1;
  const ProjectionRef ref{ones.data(), map};
  std::vector<float> target(200, 0.0f);
  backproject_rows(grid, detector, &ref, 1, 1.0f, target.data(), 0, 0, 1);
  for (int i = 0; i < 200; ++i) {
    const double y = -150 + i + 0.5;
    const double den = (y + 50) / 50;  // magnification relative to the axis
    const double expected = den > 0 ? map.weight / (den * den) : 0.0;
    // Very close to the source the magnification blows up; compare relatively there.
    EXPECT_NEAR(target[static_cast<std::size_t>(i)], expected, 1e-5 * (1 + expected)) << y;
  }
}

TEST(BackprojectCpuEdges, SinglePixelDetectorsUseTheCheckedPath) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  for (DetectorShape detector : {DetectorShape{1, 9}, DetectorShape{9, 1}, DetectorShape{1, 1}}) {
    const std::vector<Projection> projections = {
        {random.floats(detector.pixels(), 0.5, 1),
         make_projection_map(BeamKind::kParallel, parallel_vector(0.3, 0.7, 0.7), detector)}};
    GridSpec grid;
    grid.base = {-4, -4, -1};
    grid.x_axis = {8, 0, 0};
    grid.y_axis = {0, 0, 2};
    grid.width = 33;
    grid.height = 9;
    const auto out = run_backprojection(grid, detector, projections, 1.0f,
                                        std::vector<float>(grid.points(), 0.0f));
    const auto ref = reference_backprojection(grid, detector, projections, 1.0);
    EXPECT_LT(test::relative_error(out, ref), 1e-5);
  }
}

TEST(BackprojectCpuEdges, RowRangesTouchOnlyTheirRowsAndRejectBadArguments) {
  const DetectorShape detector{8, 8};
  const std::vector<float> ones(detector.pixels(), 1.0f);
  const ProjectionRef ref{
      ones.data(),
      make_projection_map(BeamKind::kParallel, parallel_vector(0.0, 1.0, 1.0), detector)};
  GridSpec grid;
  grid.base = {-2, 0, -2};
  grid.x_axis = {4, 0, 0};
  grid.y_axis = {0, 0, 4};
  grid.z_axis = {0, 1, 0};
  grid.width = 4;
  grid.height = 4;
  grid.depth = 2;
  std::vector<float> target(grid.points(), 5.0f);
  backproject_rows(grid, detector, &ref, 1, 2.0f, target.data(), 1, 1, 3);
  for (std::size_t i = 0; i < target.size(); ++i) {
    const std::size_t plane = i / 16, row = (i / 4) % 4;
    EXPECT_EQ(target[i], plane == 1 && row >= 1 && row < 3 ? 7.0f : 5.0f) << i;
  }
  float* t = target.data();
  EXPECT_THROW(backproject_rows(grid, detector, &ref, 1, 1, t, 2, 0, 1), std::invalid_argument);
  EXPECT_THROW(backproject_rows(grid, detector, &ref, 1, 1, t, 0, 0, 5), std::invalid_argument);
  EXPECT_THROW(backproject_rows(grid, detector, &ref, 1, 1, t, 0, 2, 1), std::invalid_argument);
  EXPECT_THROW(backproject_rows(grid, {0, 8}, &ref, 1, 1, t, 0, 0, 1), std::invalid_argument);
  EXPECT_THROW(backproject_rows(grid, detector, nullptr, 1, 1, t, 0, 0, 1), std::invalid_argument);
  EXPECT_THROW(backproject_rows(grid, detector, &ref, 1, 1, nullptr, 0, 0, 1),
               std::invalid_argument);
  ProjectionRef broken = ref;
  broken.map.row_coef[2] = std::nanf("");
  EXPECT_THROW(backproject_rows(grid, detector, &broken, 1, 1, t, 0, 0, 1), std::invalid_argument);
  broken = ref;
  broken.map.weight = INFINITY;
  EXPECT_THROW(backproject_rows(grid, detector, &broken, 1, 1, t, 0, 0, 1), std::invalid_argument);
  const ProjectionRef empty{nullptr, ref.map};
  EXPECT_THROW(backproject_rows(grid, detector, &empty, 1, 1, t, 0, 0, 1), std::invalid_argument);
  // No projections: nothing changes.
  backproject_rows(grid, detector, nullptr, 0, 1, t, 0, 0, 4);
  EXPECT_EQ(target[0], 5.0f);
}

}  // namespace
}  // namespace slicestream::cpu
