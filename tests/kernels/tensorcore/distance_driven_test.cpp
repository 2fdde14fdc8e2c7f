// Distance-driven projector: weights against analytic chord lengths, mass conservation, the
// analytic phantom, the adjoint (dot-product) test, matrix vs matrix-free, invalid input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/tensorcore/distance_driven.hpp"
#include "kernels/tensorcore/sparse_matrix.hpp"
#include "tests/kernels/tensorcore/tensorcore_test_support.hpp"
#include "tests/support/distance_driven_cpu.hpp"
#include "tests/support/ellipse_phantom_2d.hpp"

namespace slicestream::tensorcore {
namespace {

using testing::kPi;

// Exact chord length of the line point + t * dir through the axis-aligned box [lo, hi].
double chord_through_box(Vec2 point, Vec2 dir, Vec2 lo, Vec2 hi) {
  double t0 = -1e300, t1 = 1e300;
  const double p[2] = {point.x, point.y}, d[2] = {dir.x, dir.y}, l[2] = {lo.x, lo.y},
               h[2] = {hi.x, hi.y};
  for (int k = 0; k < 2; ++k) {
    if (std::abs(d[k]) < 1e-300) {
      if (p[k] < l[k] || p[k] > h[k]) return 0;
      continue;
    }
    double a = (l[k] - p[k]) / d[k], b = (h[k] - p[k]) / d[k];
    if (a > b) std::swap(a, b);
    t0 = std::max(t0, a);
    t1 = std::min(t1, b);
  }
  return t1 > t0 ? (t1 - t0) * std::sqrt(dot(dir, dir)) : 0;
}

// Bin-averaged exact chord lengths of one pixel for every bin of projection 0.
std::vector<double> exact_pixel_profile(const Geometry2d& g, const ImageGrid2d& grid, int row,
                                        int col) {
  const ProjectionVector2d& v = g.vectors[0];
  const double px = grid.pixel_mm;
  const Vec2 lo{(col - grid.width / 2.0) * px, (row - grid.height / 2.0) * px};
  const Vec2 hi{lo.x + px, lo.y + px};
  std::vector<double> out(static_cast<std::size_t>(g.bins));
  constexpr int kSamples = 4000;
  for (int b = 0; b < g.bins; ++b) {
    double sum = 0;
    for (int s = 0; s < kSamples; ++s) {
      const Vec2 point = v.detector_center + (b + (s + 0.5) / kSamples - g.bins / 2.0) * v.u;
      const Vec2 dir = g.beam == BeamKind::kParallel ? v.source_or_ray : point - v.source_or_ray;
      sum += chord_through_box(point, dir, lo, hi);
    }
    out[static_cast<std::size_t>(b)] = sum / kSamples;
  }
  return out;
}

std::vector<double> dd_pixel_profile(const Geometry2d& g, const ImageGrid2d& grid, int row,
                                     int col) {
  std::vector<float> image(static_cast<std::size_t>(grid.pixels()), 0.0f);
  image[static_cast<std::size_t>(row * grid.width + col)] = 1;
  std::vector<float> sino(static_cast<std::size_t>(g.rays()));
  dd_forward_cpu(testing::pool(), g, grid, image.data(), sino.data());
  return std::vector<double>(sino.begin(), sino.begin() + g.bins);
}

TEST(DistanceDriven, AxisAlignedWeightsAreExactChordLengths) {
  const ImageGrid2d grid{8, 8, 0.7};
  for (double angle : {0.0, kPi / 2, kPi, 3 * kPi / 2}) {
    // Bins of 0.3 mm with a fractional offset, so bins straddle pixel edges.
    const Geometry2d g = make_parallel_2d({angle}, 24, 0.3, 0.11);
    for (auto [row, col] : {std::pair{3, 4}, std::pair{0, 7}, std::pair{6, 1}}) {
      const std::vector<double> exact = exact_pixel_profile(g, grid, row, col);
      const std::vector<double> dd = dd_pixel_profile(g, grid, row, col);
      for (int b = 0; b < g.bins; ++b) {
        EXPECT_NEAR(dd[static_cast<std::size_t>(b)], exact[static_cast<std::size_t>(b)], 2e-4)
            << "angle " << angle << " bin " << b;
      }
    }
  }
}

TEST(DistanceDriven, ObliqueWeightsConserveMassAndFollowChords) {
  const ImageGrid2d grid{8, 8, 1.0};
  for (double angle : {0.3, 0.7, kPi / 4, 2.0, 2.9}) {
    const Geometry2d g = make_parallel_2d({angle}, 40, 0.35, -0.05);
    const std::vector<double> exact = exact_pixel_profile(g, grid, 2, 5);
    const std::vector<double> dd = dd_pixel_profile(g, grid, 2, 5);
    double dd_mass = 0, exact_mass = 0, diff = 0, base = 0;
    for (int b = 0; b < g.bins; ++b) {
      dd_mass += dd[static_cast<std::size_t>(b)] * 0.35;
      exact_mass += exact[static_cast<std::size_t>(b)] * 0.35;
      diff += std::abs(dd[static_cast<std::size_t>(b)] - exact[static_cast<std::size_t>(b)]);
      base += exact[static_cast<std::size_t>(b)];
    }
    // Every bin-averaged profile integrates to the pixel area; distance-driven keeps it exactly
    // and replaces the trapezoidal profile by a rectangle of the same area.
    EXPECT_NEAR(dd_mass, 1.0, 1e-6) << "angle " << angle;
    EXPECT_NEAR(exact_mass, 1.0, 1e-3) << "angle " << angle;
    // L1 distance of the rectangle from the trapezoid: largest at 45 degrees (0.37 here).
    EXPECT_LT(diff / base, 0.4) << "angle " << angle;
  }
}

TEST(DistanceDriven, FanBeamWeightsFollowChords) {
  const ImageGrid2d grid{8, 8, 1.0};
  const Geometry2d g = make_fan_2d({0.4}, 48, 0.5, 20, 10, 0.2);
  const std::vector<double> exact = exact_pixel_profile(g, grid, 5, 2);
  const std::vector<double> dd = dd_pixel_profile(g, grid, 5, 2);
  double diff = 0, base = 0, dd_sum = 0, exact_sum = 0;
  for (int b = 0; b < g.bins; ++b) {
    diff += std::abs(dd[static_cast<std::size_t>(b)] - exact[static_cast<std::size_t>(b)]);
    base += exact[static_cast<std::size_t>(b)];
    dd_sum += dd[static_cast<std::size_t>(b)];
    exact_sum += exact[static_cast<std::size_t>(b)];
  }
  EXPECT_NEAR(dd_sum / exact_sum, 1.0, 0.02);
  EXPECT_LT(diff / base, 0.35);
}

TEST(DistanceDriven, ProjectsThePhantomLikeItsExactLineIntegrals) {
  // The pixelised phantom's projection approaches the exact bin-averaged line integrals as the
  // grid refines (the difference is the pixelisation of sharp edges, not the projector).
  const double extent_mm = 48;
  const auto phantom = shepp_logan_2d(0.5 * extent_mm);
  for (const Geometry2d& g : {testing::small_parallel(60, 128, extent_mm, 0.13),
                              testing::small_fan(60, 160, extent_mm, -0.2)}) {
    const std::vector<float> exact = project_phantom(testing::pool(), phantom, g, 8);
    double previous = 1;
    for (int size : {48, 96, 192}) {
      const ImageGrid2d grid{size, size, extent_mm / size};
      const std::vector<float> image = sample_phantom(testing::pool(), phantom, grid, 4);
      std::vector<float> sino(static_cast<std::size_t>(g.rays()));
      dd_forward_cpu(testing::pool(), g, grid, image.data(), sino.data());
      const double error = testing::relative_error(sino, exact);
      EXPECT_LT(error, 0.75 * previous) << to_string(g.beam) << " " << size;
      previous = error;
    }
    EXPECT_LT(previous, 0.015) << to_string(g.beam);
  }
}

TEST(DistanceDriven, BackprojectionIsTheAdjoint) {
  const ImageGrid2d grid{40, 40, 0.8};
  for (const Geometry2d& g :
       {testing::small_parallel(45, 64, 32.0, 0.37), testing::small_fan(36, 80, 32.0, 0.5),
        make_parallel_2d(uniform_angles(8, kPi), 64, 0.5)}) {
    const std::vector<float> x =
        testing::random_vector(static_cast<std::size_t>(grid.pixels()), 11);
    const std::vector<float> y = testing::random_vector(static_cast<std::size_t>(g.rays()), 12);
    std::vector<float> ax(y.size()), aty(x.size());
    dd_forward_cpu(testing::pool(), g, grid, x.data(), ax.data());
    dd_backward_cpu(testing::pool(), g, grid, y.data(), aty.data());
    const double lhs = testing::dot(ax, y);
    const double rhs = testing::dot(x, aty);
    EXPECT_NEAR(lhs / rhs, 1.0, 1e-5) << to_string(g.beam);
  }
}

TEST(DistanceDriven, SparseMatrixMatchesMatrixFreeAndDense) {
  const ImageGrid2d grid{24, 20, 1.0};
  const Geometry2d g = testing::small_parallel(30, 40, 24.0, 0.21);
  const CsrMatrix a = build_dd_matrix(testing::pool(), g, grid);
  ASSERT_EQ(a.rows, g.rays());
  ASSERT_EQ(a.cols, grid.pixels());
  // Dense reference from the CSR entries (sorted, no duplicates).
  std::vector<double> dense(static_cast<std::size_t>(a.rows * a.cols), 0.0);
  for (long long r = 0; r < a.rows; ++r) {
    for (long long k = a.row_ptr[static_cast<std::size_t>(r)];
         k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k) {
      if (k > a.row_ptr[static_cast<std::size_t>(r)]) {
        ASSERT_LT(a.col[static_cast<std::size_t>(k) - 1], a.col[static_cast<std::size_t>(k)]);
      }
      dense[static_cast<std::size_t>(r * a.cols + a.col[static_cast<std::size_t>(k)])] =
          a.values[static_cast<std::size_t>(k)];
    }
  }
  const int columns = 3;
  const std::vector<float> x =
      testing::random_vector(static_cast<std::size_t>(a.cols * columns), 5);
  std::vector<float> y_csr(static_cast<std::size_t>(a.rows * columns)), y_dense(y_csr.size());
  csr_multiply(testing::pool(), a, x.data(), y_csr.data(), columns);
  for (long long r = 0; r < a.rows; ++r) {
    for (int c = 0; c < columns; ++c) {
      double s = 0;
      for (long long p = 0; p < a.cols; ++p)
        s += dense[static_cast<std::size_t>(r * a.cols + p)] *
             x[static_cast<std::size_t>(p * columns + c)];
      y_dense[static_cast<std::size_t>(r * columns + c)] = static_cast<float>(s);
    }
  }
  EXPECT_LT(testing::relative_error(y_csr, y_dense), 1e-6);
  // Column 1 through the matrix-free projector.
  std::vector<float> x1(static_cast<std::size_t>(a.cols)), y1(static_cast<std::size_t>(a.rows)),
      y1_csr(y1.size());
  for (long long p = 0; p < a.cols; ++p)
    x1[static_cast<std::size_t>(p)] = x[static_cast<std::size_t>(p * columns + 1)];
  dd_forward_cpu(testing::pool(), g, grid, x1.data(), y1.data());
  for (long long r = 0; r < a.rows; ++r)
    y1_csr[static_cast<std::size_t>(r)] = y_csr[static_cast<std::size_t>(r * columns + 1)];
  EXPECT_LT(testing::relative_error(y1_csr, y1), 1e-6);
  // Transposed product against the matrix-free backprojection.
  const std::vector<float> y = testing::random_vector(static_cast<std::size_t>(a.rows), 9);
  std::vector<float> xt(static_cast<std::size_t>(a.cols)), xt_free(xt.size());
  csr_multiply_transposed(testing::pool(), a, y.data(), xt.data(), 1);
  dd_backward_cpu(testing::pool(), g, grid, y.data(), xt_free.data());
  EXPECT_LT(testing::relative_error(xt, xt_free), 1e-6);
}

TEST(DistanceDriven, FortyFiveDegreesUsesBothAxes) {
  // At exactly 45 degrees the mean of both driving axes is used: still mass-conserving, and the
  // matrix merges the two contributions into one entry per pixel and bin.
  const ImageGrid2d grid{8, 8, 1.0};
  const Geometry2d g = make_parallel_2d({kPi / 4}, 32, 0.5);
  const std::vector<double> dd = dd_pixel_profile(g, grid, 3, 3);
  double mass = 0;
  for (double w : dd)
    mass += w * 0.5;
  EXPECT_NEAR(mass, 1.0, 1e-6);
  const CsrMatrix a = build_dd_matrix(testing::pool(), g, grid);
  for (long long r = 0; r < a.rows; ++r) {
    for (long long k = a.row_ptr[static_cast<std::size_t>(r)] + 1;
         k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k) {
      EXPECT_LT(a.col[static_cast<std::size_t>(k) - 1], a.col[static_cast<std::size_t>(k)]);
    }
  }
}

TEST(DistanceDriven, RefusesInvalidInput) {
  const ImageGrid2d grid{8, 8, 1.0};
  std::vector<float> image(64), sino(64 * 4);
  Geometry2d no_bins = make_parallel_2d({0.0}, 0, 1.0);
  EXPECT_THROW(dd_forward_cpu(testing::pool(), no_bins, grid, image.data(), sino.data()),
               std::invalid_argument);
  Geometry2d nan = make_parallel_2d({0.0}, 8, 1.0);
  nan.vectors[0].u.x = std::nan("");
  EXPECT_THROW(build_dd_matrix(testing::pool(), nan, grid), std::invalid_argument);
  const Geometry2d ok = make_parallel_2d({0.0}, 8, 1.0);
  EXPECT_THROW(
      dd_forward_cpu(testing::pool(), ok, ImageGrid2d{0, 8, 1.0}, image.data(), sino.data()),
      std::invalid_argument);
  EXPECT_THROW(build_dd_matrix(testing::pool(), ok, ImageGrid2d{8, 8, -1.0}),
               std::invalid_argument);
  std::vector<float> factors(3);
  DdMatrixOptions options;
  options.column_factors = &factors;
  EXPECT_THROW(build_dd_matrix(testing::pool(), ok, grid, options), std::invalid_argument);
  // A source on the detector line.
  const Geometry2d degenerate = make_fan_2d({0.0}, 64, 1.0, 5, -5);
  EXPECT_THROW(build_dd_matrix(testing::pool(), degenerate, grid), std::invalid_argument);
}

TEST(DistanceDriven, SliceGeometryFromScanGeometry) {
  CircularParallelParams params;
  params.angles_rad = {0.0, 0.5, 1.0};
  params.pixel_width_mm = 0.5;
  const ScanGeometry scan = make_parallel_geometry({4, 16}, params);
  const Geometry2d g = slice_geometry_2d(scan, 2);
  const Geometry2d ref = make_parallel_2d(params.angles_rad, 16, 0.5);
  ASSERT_EQ(g.angles(), 3);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(g.vectors[static_cast<std::size_t>(k)].u.x,
                ref.vectors[static_cast<std::size_t>(k)].u.x, 1e-12);
    EXPECT_NEAR(g.vectors[static_cast<std::size_t>(k)].source_or_ray.y,
                ref.vectors[static_cast<std::size_t>(k)].source_or_ray.y, 1e-12);
  }
  CircularConeParams cone;
  cone.angles_rad = {0.0, 1.0};
  cone.source_origin_mm = 100;
  cone.origin_detector_mm = 50;
  const ScanGeometry cone_scan = make_cone_geometry({4, 16}, cone);
  EXPECT_THROW(slice_geometry_2d(cone_scan, 0), std::invalid_argument);  // off the source plane
  // With an even row count the source plane lies between the two central rows (continuous 1.5).
  const Geometry2d between = slice_geometry_2d(cone_scan, 1.5);
  EXPECT_EQ(between.beam, BeamKind::kCone);
  EXPECT_NEAR(between.vectors[1].detector_center.x, cone_scan.vectors[1].detector_center.x, 1e-12);
  EXPECT_NEAR(between.vectors[1].detector_center.y, cone_scan.vectors[1].detector_center.y, 1e-12);
  EXPECT_THROW(slice_geometry_2d(cone_scan, 1.25), std::invalid_argument);
  EXPECT_THROW(slice_geometry_2d(cone_scan, 3.5), std::invalid_argument);  // beyond the last row
  const ScanGeometry odd = make_cone_geometry({5, 16}, cone);
  const Geometry2d fan = slice_geometry_2d(odd, 2);  // the central row is a fan beam
  EXPECT_EQ(fan.beam, BeamKind::kCone);
  EXPECT_NEAR(fan.vectors[0].source_or_ray.y, -100, 1e-12);
  EXPECT_THROW(slice_geometry_2d(scan, 4), std::invalid_argument);
}

}  // namespace
}  // namespace slicestream::tensorcore
