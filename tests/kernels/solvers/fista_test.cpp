// FISTA (kernels/solvers/fista.hpp) on the host: the smoothed-TV gradient against finite
// differences of the TV itself, the power-iteration estimate of ||A||^2, non-negativity, the
// discrepancy stop, scale invariance of the dimensionless weights (3 b gives 3 x, column by
// column), and regularisation lowering the error against the analytic phantom on sparse, noisy
// data where unregularised least squares fits the noise.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>

#include "kernels/expr/host_evaluate.hpp"
#include "kernels/solvers/cgls.hpp"
#include "kernels/solvers/fista.hpp"
#include "kernels/solvers/total_variation.hpp"
#include "kernels/tensorcore/csr_projector.hpp"
#include "kernels/tensorcore/sparse_matrix.hpp"
#include "tests/kernels/tensorcore/tensorcore_test_support.hpp"
#include "tests/support/ellipse_phantom_2d.hpp"

namespace slicestream::tensorcore {
namespace {

using solvers::FistaOptions;
using solvers::FistaReport;
using solvers::FistaWorkspace;
using solvers::Regularizer;
using solvers::StopReason;

struct Problem {
  Problem(int angles, double noise_sigma, std::uint32_t seed = 7)
      : geometry(testing::small_parallel(angles, 96, 64.0)),
        matrix(std::make_shared<CsrMatrix>(build_dd_matrix(testing::pool(), geometry, grid))),
        op(matrix, testing::pool()) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> noise(0.0f, static_cast<float>(noise_sigma));
    for (float& v : data)
      v += noise_sigma > 0 ? noise(rng) : 0.0f;
  }
  FistaOptions options(Regularizer regularizer, double weight, int iterations) const {
    FistaOptions o;
    o.max_iterations = iterations;
    o.regularizer = regularizer;
    o.weight = weight;
    o.image_width = grid.width;
    o.image_height = grid.height;
    return o;
  }
  FistaReport solve(std::vector<float>& x, const FistaOptions& o, int columns = 1,
                    const std::vector<float>* b = nullptr) {
    FistaWorkspace workspace;
    return solvers::fista_cpu(op, b ? b->data() : data.data(), x.data(), columns, o, workspace);
  }

  ImageGrid2d grid{64, 64, 1.0};
  std::vector<Ellipse2d> phantom = shepp_logan_2d(30.0, 0.1);
  std::vector<float> truth = sample_phantom(testing::pool(), phantom, grid, 4);
  Geometry2d geometry;
  std::vector<float> data = project_phantom(testing::pool(), phantom, geometry, 8);
  std::shared_ptr<CsrMatrix> matrix;
  CsrProjector op;
};

TEST(TotalVariationGradient, MatchesFiniteDifferencesOfTheTotalVariation) {
  const int width = 9, height = 7, columns = 2;
  std::vector<float> x =
      testing::random_vector(static_cast<std::size_t>(width * height * columns), 3, 0.0f, 1.0f);
  const float weight[2] = {1.0f, 2.5f};
  const float epsilon[2] = {0.05f, 0.2f};
  std::vector<float> g(x.size(), 0.0f);
  using namespace expr;
  const solvers::TotalVariationGradient tv{x.data(), weight, epsilon, width, height, columns};
  evaluate_pass(fused(store(g.data(), solvers::total_variation_gradient(tv))),
                Extent2D{width * height, columns}, nullptr);
  const double h = 1e-3;
  for (int c = 0; c < columns; ++c) {
    for (int p = 0; p < width * height; ++p) {
      std::vector<float> plus = x, minus = x;
      plus[static_cast<std::size_t>(p * columns + c)] += static_cast<float>(h);
      minus[static_cast<std::size_t>(p * columns + c)] -= static_cast<float>(h);
      const double numeric =
          weight[c] *
          (solvers::total_variation(plus.data(), width, height, columns, c, epsilon[c]) -
           solvers::total_variation(minus.data(), width, height, columns, c, epsilon[c])) /
          (2 * h);
      EXPECT_NEAR(g[static_cast<std::size_t>(p * columns + c)], numeric, 2e-2 * weight[c])
          << "pixel " << p << " column " << c;
    }
  }
}

TEST(Fista, EstimatesTheOperatorNormFromBelowWithinItsMargin) {
  Problem p(60, 0);
  std::vector<float> x(p.truth.size(), 0.0f);
  const FistaReport report = p.solve(x, p.options(Regularizer::kNone, 0, 0));
  // Reference: many more power iterations in double.
  std::vector<double> v(p.truth.size(), 1.0);
  std::vector<float> vf(v.size()), av(static_cast<std::size_t>(p.geometry.rays())), w(v.size());
  double lambda = 0;
  for (int it = 0; it < 200; ++it) {
    std::copy(v.begin(), v.end(), vf.begin());
    p.op.forward(vf.data(), av.data(), 1);
    p.op.backward(av.data(), w.data(), 1);
    double n = 0;
    for (float e : w)
      n += static_cast<double>(e) * e;
    n = std::sqrt(n);
    double nv = 0;
    for (double e : v)
      nv += e * e;
    lambda = n / std::sqrt(nv);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = w[i] / n;
  }
  EXPECT_GE(report.lipschitz, lambda);
  EXPECT_LE(report.lipschitz, solvers::kLipschitzMargin * lambda * 1.001);
}

TEST(Fista, UnregularisedFitsTheDataAndKeepsNonNegativity) {
  Problem p(90, 0);
  std::vector<float> x(p.truth.size(), 0.0f);
  FistaOptions o = p.options(Regularizer::kNone, 0, 150);
  const FistaReport report = p.solve(x, o);
  EXPECT_EQ(report.iterations, 150);
  EXPECT_EQ(report.stop[0], StopReason::kMaxIterations);
  EXPECT_DOUBLE_EQ(report.relative_residual[0][0], 1.0);
  EXPECT_LT(report.relative_residual.back()[0], 0.05);
  EXPECT_LT(testing::relative_error(x, p.truth), 0.2);
  EXPECT_GE(*std::min_element(x.begin(), x.end()), 0.0f);
}

TEST(Fista, StopsAtTheDiscrepancyLevel) {
  Problem p(60, 0);
  std::vector<float> x(p.truth.size(), 0.0f);
  FistaOptions o = p.options(Regularizer::kTotalVariation, 1e-3, 200);
  o.relative_tolerance = 0.1;
  const FistaReport report = p.solve(x, o);
  EXPECT_EQ(report.stop[0], StopReason::kDiscrepancy);
  EXPECT_LT(report.iterations, 200);
  EXPECT_LE(report.relative_residual.back()[0], 0.1);
  EXPECT_GT(report.relative_residual[report.relative_residual.size() - 2][0], 0.1);
  // A start that already fits as well as the noise allows is returned as it is (projected).
  std::vector<float> start = x;
  const FistaReport again = p.solve(start, o);
  EXPECT_EQ(again.iterations, 0);
  EXPECT_EQ(again.stop[0], StopReason::kDiscrepancy);
  EXPECT_EQ(start, x);
}

TEST(Fista, WeightsAreDimensionlessColumnsIndependent) {
  Problem p(45, 0);
  const long long rays = p.geometry.rays();
  std::vector<float> b(static_cast<std::size_t>(rays * 2));
  for (long long r = 0; r < rays; ++r) {
    b[static_cast<std::size_t>(2 * r)] = p.data[static_cast<std::size_t>(r)];
    b[static_cast<std::size_t>(2 * r + 1)] = 3 * p.data[static_cast<std::size_t>(r)];
  }
  std::vector<float> x(p.truth.size() * 2);
  for (std::size_t i = 0; i < p.truth.size(); ++i) {  // different start scales, same shape
    x[2 * i] = 0.8f * p.truth[i] + 0.01f;
    x[2 * i + 1] = 3 * x[2 * i];
  }
  const FistaReport report = p.solve(x, p.options(Regularizer::kTotalVariation, 2e-3, 30), 2, &b);
  EXPECT_NEAR(report.regularizer_weight[1], 3 * report.regularizer_weight[0],
              1e-5 * report.regularizer_weight[1]);
  double worst = 0;
  for (std::size_t i = 0; i < p.truth.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(x[2 * i + 1]) - 3.0 * x[2 * i]));
  EXPECT_LT(worst, 1e-4);
  EXPECT_EQ(report.column_iterations[0], report.column_iterations[1]);
}

TEST(Fista, RegularisationBeatsLeastSquaresOnSparseNoisyData) {
  Problem p(30, 0.3);
  // The start: a rough reconstruction (a few CGLS iterations), as the FBP slice is in refinement;
  // its largest value sets the TV scale.
  std::vector<float> start(p.truth.size(), 0.0f);
  solvers::CglsOptions rough;
  rough.max_iterations = 3;
  solvers::CglsWorkspace cgls_workspace;
  solvers::cgls_cpu(p.op, p.data.data(), start.data(), 1, rough, cgls_workspace);
  auto error_after = [&](Regularizer regularizer, double weight) {
    std::vector<float> x = start;
    p.solve(x, p.options(regularizer, weight, 100));
    return testing::relative_error(x, p.truth);
  };
  const double plain = error_after(Regularizer::kNone, 0);
  const double tikhonov = error_after(Regularizer::kTikhonov, 0.05);
  const double tv = error_after(Regularizer::kTotalVariation, 2e-3);
  std::printf("relative error: none %.4f, tikhonov %.4f, tv %.4f\n", plain, tikhonov, tv);
  EXPECT_LT(tikhonov, plain);
  EXPECT_LT(tv, 0.8 * plain);
}

TEST(Fista, RefusesInconsistentOptions) {
  Problem p(30, 0);
  std::vector<float> x(p.truth.size(), 0.0f);
  FistaOptions o = p.options(Regularizer::kTotalVariation, 1e-3, 5);
  o.image_width = 63;
  EXPECT_THROW(p.solve(x, o), std::invalid_argument);
  o = p.options(Regularizer::kTotalVariation, -1, 5);
  EXPECT_THROW(p.solve(x, o), std::invalid_argument);
  o = p.options(Regularizer::kTotalVariation, 1e-3, 5);
  EXPECT_THROW(p.solve(x, o, 0), std::invalid_argument);
}

}  // namespace
}  // namespace slicestream::tensorcore
