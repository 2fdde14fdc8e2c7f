#include "kernels/tensorcore/cgls.hpp"

#include <stdexcept>

#include "kernels/expr/expr.hpp"
#include "kernels/expr/host_evaluate.hpp"
#include "kernels/tensorcore/cgls_steps.hpp"

namespace slicestream::tensorcore {

double relative_residual(const float* ax, const float* b, std::size_t count) {
  const auto reference = expr::array(b);
  return cgls_steps::relative_residual(expr::squared_norm(expr::array(ax) - reference, 0, count),
                                       expr::squared_norm(reference, 0, count));
}

CglsReport cgls_cpu(ProjectionOperator& op, const float* b, float* x, int columns,
                    const CglsOptions& options) {
  if (columns <= 0) throw std::invalid_argument("cgls: need at least one column");
  if (options.max_iterations < 0) throw std::invalid_argument("cgls: negative iteration count");
  namespace cg = cgls_steps;
  const std::size_t c = static_cast<std::size_t>(columns);
  const expr::Extent2D rays{static_cast<int>(op.rays()), columns};
  const expr::Extent2D pixels{static_cast<int>(op.pixels()), columns};
  std::vector<float> r(rays.size()), q(rays.size()), s(pixels.size()), p(pixels.size()),
      t(pixels.size());
  std::vector<float> alpha(c), beta(c);
  // start: |s|^2 then max |s|; direction: max |p| (unused here, the GPU's operand scale).
  std::vector<double> b_norm2(c), r_norm2(c), start(2 * c), delta(c), gamma_next(c), p_max(c);
  std::vector<bool> active(c, true);

  CglsReport report;
  report.column_iterations.assign(c, 0);
  expr::evaluate_pass(cg::data_norm(b), rays, b_norm2.data());
  auto record = [&] {
    std::vector<double> row(c);
    for (std::size_t col = 0; col < c; ++col) {
      row[col] = cg::relative_residual(r_norm2[col], b_norm2[col]);
      if (active[col] && options.relative_tolerance > 0 && row[col] <= options.relative_tolerance) {
        active[col] = false;
      }
    }
    report.relative_residual.push_back(std::move(row));
  };

  // r = b - A x, s = A^T r, p = s, gamma = |s|^2.
  op.forward(x, q.data(), columns);
  expr::evaluate_pass(cg::initial_residual(r.data(), b, q.data()), rays, r_norm2.data());
  record();
  op.backward(r.data(), s.data(), columns);
  expr::evaluate_pass(cg::initial_direction(p.data(), s.data()), pixels, start.data());
  std::vector<double> gamma(start.begin(), start.begin() + static_cast<std::ptrdiff_t>(c));

  for (int it = 0; it < options.max_iterations; ++it) {
    bool any = false;
    for (std::size_t col = 0; col < c; ++col)
      any = any || (active[col] && gamma[col] > 0);
    if (!any) break;
    op.forward(p.data(), q.data(), columns);
    expr::evaluate_pass(cg::direction_norm(q.data()), rays, delta.data());
    for (std::size_t col = 0; col < c; ++col) {
      if (cg::step_size(active[col], gamma[col], delta[col], &alpha[col])) {
        ++report.column_iterations[col];
      }
    }
    expr::evaluate_pass(cg::update_solution(x, alpha.data(), p.data()), pixels, nullptr);
    expr::evaluate_pass(cg::update_residual(r.data(), alpha.data(), q.data()), rays,
                        r_norm2.data());
    ++report.iterations;
    record();
    op.backward(q.data(), t.data(), columns);
    expr::evaluate_pass(cg::update_gradient(s.data(), alpha.data(), t.data()), pixels,
                        gamma_next.data());
    for (std::size_t col = 0; col < c; ++col)
      cg::direction_weight(&gamma[col], gamma_next[col], alpha[col], &beta[col]);
    expr::evaluate_pass(cg::update_direction(p.data(), s.data(), beta.data()), pixels,
                        p_max.data());
  }
  return report;
}

}  // namespace slicestream::tensorcore
