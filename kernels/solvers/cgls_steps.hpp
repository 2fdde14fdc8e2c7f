// The CGLS iteration (paper Alg. 1) written once for the CPU solver (cgls.cpp) and its GPU twin
// (cuda/cgls_gpu.cu): the fused vector passes as kernels/expr expressions, and the per-column
// scalar recurrences. Pointers are host or device memory alike; the CPU evaluates the passes with
// expr::evaluate_pass, the GPU with cuda::evaluate_pass, over Extent2D{values / columns, columns}.
//
// Per column (slice) c, with q = A p and t = A^T q:
//   alpha = gamma / |q|^2,  x += alpha p,  r -= alpha q,  s -= alpha t,
//   beta = |s|^2 / gamma,   gamma = |s|^2,  p = s + beta p.
#pragma once

#include <cmath>

#include "kernels/expr/expression.hpp"
#include "kernels/expr/operators.hpp"
#include "kernels/expr/pass.hpp"
#include "kernels/host_device.hpp"

namespace slicestream::solvers::cgls_steps {

// |b|^2.
inline auto data_norm(const float* b) {
  return expr::fused(expr::reduce_squared_norm(expr::array(b)));
}
// r = b - q (q = A x0) with |r|^2.
inline auto initial_residual(float* r, const float* b, const float* q) {
  return expr::fused(expr::store(r, expr::array(b) - expr::array(q)),
                     expr::reduce_squared_norm(expr::array(r)));
}
// p = s (s = A^T r) with gamma = |s|^2 and max |s| (the fp16 operand scale of the next forward).
inline auto initial_direction(float* p, const float* s) {
  return expr::fused(expr::store(p, expr::array(s)), expr::reduce_squared_norm(expr::array(s)),
                     expr::reduce_max_abs(expr::array(s)));
}
// delta = |q|^2 (q = A p).
inline auto direction_norm(const float* q) {
  return expr::fused(expr::reduce_squared_norm(expr::array(q)));
}
// x += alpha p.
inline auto update_solution(float* x, const float* alpha, const float* p) {
  return expr::fused(expr::store(x, expr::array(x) + expr::per_column(alpha) * expr::array(p)));
}
// r -= alpha q with |r|^2.
inline auto update_residual(float* r, const float* alpha, const float* q) {
  return expr::fused(expr::store(r, expr::array(r) - expr::per_column(alpha) * expr::array(q)),
                     expr::reduce_squared_norm(expr::array(r)));
}
// s -= alpha t (t = A^T q) with gamma' = |s|^2. Backprojecting A p rather than the data residual
// (paper Alg. 1) keeps the fp16 rounding of the backprojected operand relative to what is
// backprojected: the residual r of an inconsistent system stays large while A^T r shrinks, so
// rounding r would swamp the gradient in late iterations.
inline auto update_gradient(float* s, const float* alpha, const float* t) {
  return expr::fused(expr::store(s, expr::array(s) - expr::per_column(alpha) * expr::array(t)),
                     expr::reduce_squared_norm(expr::array(s)));
}
// p = s + beta p with max |p|.
inline auto update_direction(float* p, const float* s, const float* beta) {
  return expr::fused(expr::store(p, expr::array(s) + expr::per_column(beta) * expr::array(p)),
                     expr::reduce_max_abs(expr::array(p)));
}

// alpha = gamma / delta when the column is active and has a step to take (else 0); returns
// whether it takes one.
SLICESTREAM_INLINE bool step_size(bool active, double gamma, double delta, float* alpha) {
  const bool step = active && gamma > 0 && delta > 0;
  *alpha = step ? static_cast<float>(gamma / delta) : 0.0f;
  return step;
}

// beta = gamma' / gamma; gamma <- gamma' where a step was taken (alpha != 0).
SLICESTREAM_INLINE void direction_weight(double* gamma, double gamma_next, float alpha,
                                         float* beta) {
  *beta = *gamma > 0 ? static_cast<float>(gamma_next / *gamma) : 0.0f;
  if (alpha != 0.0f) *gamma = gamma_next;
}

// ||A x - b|| / ||b|| from the squared norms (||r|| itself when b = 0).
inline double relative_residual(double r_norm2, double b_norm2) {
  return b_norm2 > 0 ? std::sqrt(r_norm2 / b_norm2) : std::sqrt(r_norm2);
}

}  // namespace slicestream::solvers::cgls_steps
