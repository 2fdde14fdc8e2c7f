// The fused vector passes of FISTA (fista.hpp) as kernels/expr expressions, for the host
// (fista_cpu) and the device (cuda/fista_gpu) alike; the sweep itself is fista_iterations.hpp.
// Residuals follow CGLS's sign (r = b - A y), so g = A^T r - grad R(y) is the descent direction
// and the data-norm and start passes are CGLS's (cgls_steps.hpp).
#pragma once

#include "kernels/expr/expression.hpp"
#include "kernels/expr/operators.hpp"
#include "kernels/expr/pass.hpp"
#include "kernels/solvers/total_variation.hpp"

namespace slicestream::solvers::fista_steps {

// max(x, 0) per column (the image scale s of the TV weight).
inline auto positive_maximum(const float* x) {
  return expr::fused(expr::reduce_max_abs(expr::max(expr::array(x), 0.0f)));
}
// x = max(x, lower) (the start image projected onto the bounds; lower = -inf: unchanged).
inline auto project(float* x, float lower) {
  return expr::fused(expr::store(x, expr::max(expr::array(x), lower)));
}
// g -= tikhonov y + grad (w TV_eps)(y).
inline auto subtract_regularizer_gradient(float* g, const float* y, const float* tikhonov,
                                          const TotalVariationGradient& tv) {
  return expr::fused(expr::store(g, expr::array(g) - expr::per_column(tikhonov) * expr::array(y) -
                                        total_variation_gradient(tv)));
}
// z = active ? max(y + step g, lower) : x, with (y - z) . (z - x) (restart when > 0: the
// momentum points uphill), |z - x|^2 and |z|^2.
inline auto projected_step(float* z, const float* y, const float* g, const float* step,
                           const float* active, const float* x, float lower) {
  const auto moved = expr::max(expr::array(y) + expr::per_column(step) * expr::array(g), lower);
  return expr::fused(
      expr::store(z, expr::select(expr::per_column(active) > 0.0f, moved, expr::array(x))),
      expr::reduce_dot(expr::array(y) - expr::array(z), expr::array(z) - expr::array(x)),
      expr::reduce_squared_norm(expr::array(z) - expr::array(x)),
      expr::reduce_squared_norm(expr::array(z)));
}
// y = z + beta (z - x), then x = z.
inline auto momentum(float* y, float* x, const float* z, const float* beta) {
  return expr::fused(
      expr::store(y, expr::array(z) + expr::per_column(beta) * (expr::array(z) - expr::array(x))),
      expr::store(x, expr::array(z)));
}
// r = b - (A x' + beta (A x' - A x)) = b - A y' for the next gradient, with |b - A x'|^2 (the
// residual of the new image x').
inline auto extrapolated_residual(float* r, const float* b, const float* ax_next, const float* ax,
                                  const float* beta) {
  return expr::fused(
      expr::store(r, expr::array(b) - expr::array(ax_next) -
                         expr::per_column(beta) * (expr::array(ax_next) - expr::array(ax))),
      expr::reduce_squared_norm(expr::array(b) - expr::array(ax_next)));
}
// |v|^2 (power iteration).
inline auto squared_norm(const float* v) {
  return expr::fused(expr::reduce_squared_norm(expr::array(v)));
}
// v = scale w (power iteration: the next normalised vector).
inline auto scaled_copy(float* v, const float* w, const float* scale) {
  return expr::fused(expr::store(v, expr::per_column(scale) * expr::array(w)));
}
// v = 1.
inline auto fill_ones(float* v) {
  return expr::fused(expr::store(v, expr::scalar(1.0f)));
}

}  // namespace slicestream::solvers::fista_steps
