#include "kernels/solvers/cgls.hpp"

#include <stdexcept>

#include "kernels/expr/expr.hpp"
#include "kernels/expr/host_evaluate.hpp"
#include "kernels/solvers/accurate_products_scope.hpp"
#include "kernels/solvers/cgls_steps.hpp"

namespace slicestream::solvers {

double relative_residual(const float* ax, const float* b, std::size_t count) {
  const auto reference = expr::array(b);
  return cgls_steps::relative_residual(expr::squared_norm(expr::array(ax) - reference, 0, count),
                                       expr::squared_norm(reference, 0, count));
}

CglsReport cgls_cpu(ProjectionOperator& op, const float* b, float* x, int columns,
                    const CglsOptions& options, CglsWorkspace& workspace) {
  if (columns <= 0) throw std::invalid_argument("cgls: need at least one column");
  if (options.max_iterations < 0) throw std::invalid_argument("cgls: negative iteration count");
  if (options.accurate_iterations < 0) {
    throw std::invalid_argument("cgls: negative accurate iteration count");
  }
  namespace cg = cgls_steps;
  const std::size_t c = static_cast<std::size_t>(columns);
  const expr::Extent2D rays{static_cast<int>(op.rays()), columns};
  const expr::Extent2D pixels{static_cast<int>(op.pixels()), columns};
  workspace.reserve({op.rays(), op.pixels(), columns, options.max_iterations});
  CglsWorkspace& w = workspace;
  float* r = w.r.data();
  float* q = w.q.data();
  float* s = w.s.data();
  float* p = w.p.data();
  float* t = w.t.data();
  float* alpha = w.alpha.data();
  float* beta = w.beta.data();
  // start: |s|^2 then max |s|; direction: max |p| (unused here, the GPU's operand scale).
  double* b_norm2 = w.b_norm2.data();
  double* r_norm2 = w.r_norm2.data();
  double* start = w.start.data();
  double* delta = w.delta.data();
  double* gamma_next = w.gamma_next.data();
  double* p_max = w.p_max.data();
  std::vector<bool> active(c, true);

  CglsReport report;
  report.column_iterations.assign(c, 0);
  expr::evaluate_pass(cg::data_norm(b), rays, b_norm2);
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

  AccurateProductsScope<ProjectionOperator> precision(op, options.accurate_iterations);
  // r = b - A x, s = A^T r, p = s, gamma = |s|^2.
  op.forward(x, q, columns);
  expr::evaluate_pass(cg::initial_residual(r, b, q), rays, r_norm2);
  record();
  op.backward(r, s, columns);
  expr::evaluate_pass(cg::initial_direction(p, s), pixels, start);
  std::vector<double> gamma(start, start + c);

  for (int it = 0; it < options.max_iterations; ++it) {
    bool any = false;
    for (std::size_t col = 0; col < c; ++col)
      any = any || (active[col] && gamma[col] > 0);
    if (!any) break;
    precision.before_iteration(it);
    op.forward(p, q, columns);
    expr::evaluate_pass(cg::direction_norm(q), rays, delta);
    for (std::size_t col = 0; col < c; ++col) {
      if (cg::step_size(active[col], gamma[col], delta[col], &alpha[col])) {
        ++report.column_iterations[col];
      }
    }
    expr::evaluate_pass(cg::update_solution(x, alpha, p), pixels, nullptr);
    expr::evaluate_pass(cg::update_residual(r, alpha, q), rays, r_norm2);
    ++report.iterations;
    record();
    op.backward(q, t, columns);
    expr::evaluate_pass(cg::update_gradient(s, alpha, t), pixels, gamma_next);
    for (std::size_t col = 0; col < c; ++col)
      cg::direction_weight(&gamma[col], gamma_next[col], alpha[col], &beta[col]);
    expr::evaluate_pass(cg::update_direction(p, s, beta), pixels, p_max);
  }
  return report;
}

}  // namespace slicestream::solvers
