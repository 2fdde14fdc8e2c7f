// One refinement request on a refiner's solvers, for both backends' SliceRefiners (CPU and
// CUDA): which solver runs, with which options, and what the result reports. The refiner
// supplies the solves on its own vectors:
//   double start_residual()                     ||A x0 - b|| / ||b||
//   solvers::CglsReport cgls(const CglsOptions&)
//   solvers::FistaReport fista(const FistaOptions&)
//   double clip()                               x = max(x, 0); returns the new relative residual
#pragma once

#include "kernels/solvers/cgls.hpp"
#include "kernels/solvers/fista.hpp"
#include "pipeline/backend/backend.hpp"

namespace slicestream {

// `lipschitz`: ||A||^2 of the refiner's matrix once a FISTA solve estimated it (0 before), kept
// by the refiner so that the estimate runs once per matrix.
template <class Solves>
RefinementResult run_refinement(const RefinementRequest& request, int width, int height,
                                double& lipschitz, Solves& solves) {
  RefinementResult result;
  result.summary = summary_of(request);
  if (request.max_iterations <= 0) {
    result.residual_before = result.residual_after = solves.start_residual();
    return result;
  }
  if (request.settings.method == RefinementMethod::kFista) {
    const solvers::FistaReport report =
        solves.fista(fista_options(request, width, height, lipschitz));
    lipschitz = report.lipschitz;
    result.residual_before = report.relative_residual.front()[0];
    result.residual_after = report.relative_residual.back()[0];
    result.iterations = report.iterations;
    result.summary.stop_reason = to_string(report.stop[0]);
    return result;
  }
  solvers::CglsOptions options;
  options.max_iterations = request.max_iterations;
  options.relative_tolerance = target_residual(request);
  const solvers::CglsReport report = solves.cgls(options);
  result.residual_before = report.relative_residual.front()[0];
  result.residual_after = report.relative_residual.back()[0];
  result.iterations = report.iterations;
  if (options.relative_tolerance > 0 && result.residual_after <= options.relative_tolerance) {
    result.summary.stop_reason = to_string(solvers::StopReason::kDiscrepancy);
  } else if (report.iterations < request.max_iterations) {
    result.summary.stop_reason = to_string(solvers::StopReason::kConverged);
  } else {
    result.summary.stop_reason = to_string(solvers::StopReason::kMaxIterations);
  }
  // CGLS knows no bounds: a non-negative result is its projection (never farther from a
  // non-negative object), with the residual of what is returned.
  if (request.settings.non_negative) result.residual_after = solves.clip();
  return result;
}

}  // namespace slicestream
