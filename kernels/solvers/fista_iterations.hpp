// The FISTA sweep of fista.hpp written once over an engine that evaluates the passes and applies
// the operator: the host's (fista.cpp) or the device's (cuda/fista_gpu.cu). The per-column
// scalars (step, momentum weight, restart, stopping) are computed on the host from the passes'
// reductions; the engine moves them where the passes read them.
//
// Engine:
//   template <class P> void pass(const P&, expr::Extent2D, double* host_results)
//   void forward(const float* image, float* sinogram);  void backward(const float*, float*);
//   void upload(float* target, const std::vector<float>& host)   (per-column scalars)
#pragma once

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/expr/index.hpp"
#include "kernels/solvers/cgls_steps.hpp"
#include "kernels/solvers/fista.hpp"
#include "kernels/solvers/fista_steps.hpp"

namespace slicestream::solvers::fista_detail {

// Where one solve's vectors live (host or device memory; fista_steps.hpp's passes use them).
struct FistaVectors {
  float *r, *ax, *ax_next, *y, *z, *g;
  float *step, *beta, *active, *tikhonov, *tv_weight, *tv_epsilon;
};

// The vectors of a FistaWorkspace or cuda::FistaWorkspaceGpu (same members, host or device).
template <class Workspace>
FistaVectors vectors_of(Workspace& w) {
  return {w.r.data(),      w.ax.data(),       w.ax_next.data(),   w.y.data(),
          w.z.data(),      w.g.data(),        w.step.data(),      w.beta.data(),
          w.active.data(), w.tikhonov.data(), w.tv_weight.data(), w.tv_epsilon.data()};
}

// ||A||^2 by power iteration on A^T A from the ones vector (in y; g and r are scratch): the
// largest Rayleigh quotient |A^T A v| / |v| over the columns, times kLipschitzMargin.
template <class Engine>
double estimate_lipschitz(Engine& engine, const FistaVectors& v, expr::Extent2D rays,
                          expr::Extent2D pixels) {
  namespace fs = fista_steps;
  const std::size_t c = static_cast<std::size_t>(pixels.cols);
  std::vector<double> norm2(c), estimate(c, 0.0);
  std::vector<float> scale(c);
  engine.pass(fs::fill_ones(v.y), pixels, nullptr);
  engine.pass(fs::squared_norm(v.y), pixels, norm2.data());
  for (int it = 0; it < kPowerIterations; ++it) {
    engine.forward(v.y, v.r);
    engine.backward(v.r, v.g);
    std::vector<double> next2(c);
    engine.pass(fs::squared_norm(v.g), pixels, next2.data());
    for (std::size_t col = 0; col < c; ++col) {
      estimate[col] = norm2[col] > 0 ? std::sqrt(next2[col] / norm2[col]) : 0.0;
      scale[col] = next2[col] > 0 ? static_cast<float>(1.0 / std::sqrt(next2[col])) : 0.0f;
    }
    engine.upload(v.beta, scale);
    engine.pass(fs::scaled_copy(v.y, v.g, v.beta), pixels, norm2.data());
    engine.pass(fs::squared_norm(v.y), pixels, norm2.data());
  }
  (void)rays;
  double largest = 0;
  for (double e : estimate)
    largest = std::max(largest, e);
  return kLipschitzMargin * largest;
}

template <class Engine>
FistaReport fista_solve(Engine& engine, const FistaVectors& v, const float* b, float* x,
                        int columns, long long rays_count, long long pixel_count,
                        const FistaOptions& options) {
  namespace fs = fista_steps;
  namespace cg = cgls_steps;
  const std::size_t c = static_cast<std::size_t>(columns);
  const expr::Extent2D rays{static_cast<int>(rays_count), columns};
  const expr::Extent2D pixels{static_cast<int>(pixel_count), columns};
  const float lower = options.non_negative ? 0.0f : -std::numeric_limits<float>::infinity();

  FistaReport report;
  report.column_iterations.assign(c, 0);
  report.stop.assign(c, StopReason::kMaxIterations);
  report.lipschitz =
      options.lipschitz > 0 ? options.lipschitz : estimate_lipschitz(engine, v, rays, pixels);
  const double lipschitz = report.lipschitz;

  std::vector<double> b_norm2(c), r_norm2(c), scale(c), reductions(3 * c);
  engine.pass(cg::data_norm(b), rays, b_norm2.data());
  engine.pass(fs::positive_maximum(x), pixels, scale.data());
  auto relative = [&](std::size_t col) {
    return cg::relative_residual(r_norm2[col], b_norm2[col]);
  };

  // Per-column weights and steps (fista.hpp).
  std::vector<float> step(c), tikhonov(c, 0.0f), tv_weight(c, 0.0f), tv_epsilon(c, 1.0f);
  report.regularizer_weight.assign(c, 0.0);
  report.tv_epsilon.assign(c, 0.0);
  for (std::size_t col = 0; col < c; ++col) {
    double curvature = 1;
    if (options.regularizer == Regularizer::kTikhonov) {
      tikhonov[col] = static_cast<float>(options.weight * lipschitz);
      report.regularizer_weight[col] = options.weight * lipschitz;
      curvature += options.weight;
    } else if (options.regularizer == Regularizer::kTotalVariation && scale[col] > 0) {
      tv_weight[col] = static_cast<float>(options.weight * lipschitz * scale[col]);
      tv_epsilon[col] = static_cast<float>(kTvSmoothing * scale[col]);
      report.regularizer_weight[col] = tv_weight[col];
      report.tv_epsilon[col] = tv_epsilon[col];
      curvature += 8 * options.weight / kTvSmoothing;
    }
    step[col] = lipschitz > 0 ? static_cast<float>(1.0 / (lipschitz * curvature)) : 0.0f;
  }
  engine.upload(v.step, step);
  engine.upload(v.tikhonov, tikhonov);
  engine.upload(v.tv_weight, tv_weight);
  engine.upload(v.tv_epsilon, tv_epsilon);
  const TotalVariationGradient tv{
      v.y, v.tv_weight, v.tv_epsilon, options.image_width, options.image_height, columns};

  // The start image's residual as given, then the projected start x = y.
  engine.forward(x, v.ax);
  engine.pass(cg::initial_residual(v.r, b, v.ax), rays, r_norm2.data());
  std::vector<double> row(c);
  for (std::size_t col = 0; col < c; ++col)
    row[col] = relative(col);
  report.relative_residual.push_back(row);
  std::vector<float> beta(c, 0.0f), active(c, 1.0f);
  engine.upload(v.beta, beta);
  if (options.non_negative) {
    engine.pass(fs::project(x, lower), pixels, nullptr);
    engine.forward(x, v.ax);
    engine.pass(cg::initial_residual(v.r, b, v.ax), rays, r_norm2.data());
  }
  engine.pass(fs::momentum(v.y, x, x, v.beta), pixels, nullptr);  // y = x
  bool any = false;
  for (std::size_t col = 0; col < c; ++col) {
    if (options.relative_tolerance > 0 && relative(col) <= options.relative_tolerance) {
      active[col] = 0.0f;
      report.stop[col] = StopReason::kDiscrepancy;
    }
    any = any || active[col] != 0.0f;
  }
  engine.upload(v.active, active);

  std::vector<double> theta(c, 1.0);
  float* ax = v.ax;  // A x and A x' trade places every iteration
  float* ax_next = v.ax_next;
  for (int it = 0; any && it < options.max_iterations; ++it) {
    // g = A^T (b - A y) - grad R(y); z = P(y + step g).
    engine.backward(v.r, v.g);
    if (options.regularizer != Regularizer::kNone) {
      engine.pass(fs::subtract_regularizer_gradient(v.g, v.y, v.tikhonov, tv), pixels, nullptr);
    }
    engine.pass(fs::projected_step(v.z, v.y, v.g, v.step, v.active, x, lower), pixels,
                reductions.data());
    for (std::size_t col = 0; col < c; ++col) {
      beta[col] = 0.0f;
      if (active[col] == 0.0f) continue;
      ++report.column_iterations[col];
      const double uphill = reductions[col];
      const double change2 = reductions[c + col];
      const double norm2 = reductions[2 * c + col];
      if (uphill > 0) {
        theta[col] = 1.0;  // restart: the momentum points uphill
      } else {
        const double next = (1 + std::sqrt(1 + 4 * theta[col] * theta[col])) / 2;
        beta[col] = static_cast<float>((theta[col] - 1) / next);
        theta[col] = next;
      }
      if (change2 <= 1e-12 * norm2) report.stop[col] = StopReason::kConverged;
    }
    engine.upload(v.beta, beta);
    engine.pass(fs::momentum(v.y, x, v.z, v.beta), pixels, nullptr);
    engine.forward(x, ax_next);
    engine.pass(fs::extrapolated_residual(v.r, b, ax_next, ax, v.beta), rays, r_norm2.data());
    std::swap(ax, ax_next);
    ++report.iterations;
    any = false;
    for (std::size_t col = 0; col < c; ++col) {
      row[col] = relative(col);
      if (active[col] == 0.0f) continue;
      if (options.relative_tolerance > 0 && row[col] <= options.relative_tolerance) {
        report.stop[col] = StopReason::kDiscrepancy;
      }
      if (report.stop[col] != StopReason::kMaxIterations) active[col] = 0.0f;
      any = any || active[col] != 0.0f;
    }
    report.relative_residual.push_back(row);
    engine.upload(v.active, active);
  }
  return report;
}

}  // namespace slicestream::solvers::fista_detail
