#include "kernels/tensorcore/cgls.hpp"

#include <cmath>
#include <stdexcept>

#include "kernels/tensorcore/fused_expression.hpp"

namespace slicestream::tensorcore {

namespace {

using fused::assign;
using fused::pass_of;
using fused::per_column;
using fused::reduce_only;
using fused::sum_of_squares;
using fused::vec;

}  // namespace

CglsReport cgls_cpu(ProjectionOperator& op, const float* b, float* x, int columns,
                    const CglsOptions& options) {
  if (columns <= 0) throw std::invalid_argument("cgls: need at least one column");
  if (options.max_iterations < 0) throw std::invalid_argument("cgls: negative iteration count");
  const std::size_t c = static_cast<std::size_t>(columns);
  const std::size_t ray_values = static_cast<std::size_t>(op.rays()) * c;
  const std::size_t pixel_values = static_cast<std::size_t>(op.pixels()) * c;
  std::vector<float> r(ray_values), q(ray_values), s(pixel_values), p(pixel_values),
      t(pixel_values);
  std::vector<float> alpha(c), beta(c);
  std::vector<double> b_norm2(c), r_norm2(c), gamma(c), delta(c), gamma_next(c);
  std::vector<bool> active(c, true);

  CglsReport report;
  report.column_iterations.assign(c, 0);
  fused::evaluate_host(reduce_only(sum_of_squares(vec(b))), ray_values, columns, b_norm2.data());
  auto relative = [&](std::size_t col) {
    return b_norm2[col] > 0 ? std::sqrt(r_norm2[col] / b_norm2[col]) : std::sqrt(r_norm2[col]);
  };
  auto record = [&] {
    std::vector<double> row(c);
    for (std::size_t col = 0; col < c; ++col) {
      row[col] = relative(col);
      if (active[col] && options.relative_tolerance > 0 && row[col] <= options.relative_tolerance) {
        active[col] = false;
      }
    }
    report.relative_residual.push_back(std::move(row));
  };

  // r = b - A x, s = A^T r, p = s, gamma = |s|^2.
  op.forward(x, q.data(), columns);
  fused::evaluate_host(
      pass_of(assign(r.data(), vec(b) - vec(q.data())), sum_of_squares(vec(r.data()))), ray_values,
      columns, r_norm2.data());
  record();
  op.backward(r.data(), s.data(), columns);
  fused::evaluate_host(pass_of(assign(p.data(), vec(s.data())), sum_of_squares(vec(s.data()))),
                       pixel_values, columns, gamma.data());

  for (int it = 0; it < options.max_iterations; ++it) {
    bool any = false;
    for (std::size_t col = 0; col < c; ++col)
      any = any || (active[col] && gamma[col] > 0);
    if (!any) break;
    op.forward(p.data(), q.data(), columns);
    fused::evaluate_host(reduce_only(sum_of_squares(vec(q.data()))), ray_values, columns,
                         delta.data());
    for (std::size_t col = 0; col < c; ++col) {
      const bool step = active[col] && gamma[col] > 0 && delta[col] > 0;
      alpha[col] = step ? static_cast<float>(gamma[col] / delta[col]) : 0.0f;
      if (step) ++report.column_iterations[col];
    }
    // x += alpha p; r -= alpha q with |r|^2: one fused pass over each space.
    fused::evaluate_host(pass_of(assign(x, vec(x) + per_column(alpha.data()) * vec(p.data()))),
                         pixel_values, columns, nullptr);
    fused::evaluate_host(
        pass_of(assign(r.data(), vec(r.data()) - per_column(alpha.data()) * vec(q.data())),
                sum_of_squares(vec(r.data()))),
        ray_values, columns, r_norm2.data());
    ++report.iterations;
    record();
    // s -= alpha A^T q (paper Alg. 1): backprojecting A p rather than the data residual keeps the
    // fp16 rounding of the backprojected operand relative to what is backprojected; the data
    // residual r of an inconsistent system stays large while A^T r shrinks, so rounding r would
    // swamp the gradient in late iterations.
    op.backward(q.data(), t.data(), columns);
    fused::evaluate_host(
        pass_of(assign(s.data(), vec(s.data()) - per_column(alpha.data()) * vec(t.data())),
                sum_of_squares(vec(s.data()))),
        pixel_values, columns, gamma_next.data());
    for (std::size_t col = 0; col < c; ++col) {
      beta[col] = gamma[col] > 0 ? static_cast<float>(gamma_next[col] / gamma[col]) : 0.0f;
      if (alpha[col] != 0) gamma[col] = gamma_next[col];
    }
    fused::evaluate_host(
        pass_of(assign(p.data(), vec(s.data()) + per_column(beta.data()) * vec(p.data()))),
        pixel_values, columns, nullptr);
  }
  return report;
}

}  // namespace slicestream::tensorcore
