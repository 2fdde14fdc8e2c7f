#include "pipeline/backend/refinement_settings.hpp"

#include <cmath>
#include <sstream>

namespace slicestream {
RefinementSettings plain_cgls_settings() {
  RefinementSettings settings;
  settings.method = RefinementMethod::kCgls;
  settings.non_negative = false;
  settings.stop = RefinementStopRule::kIterations;
  return settings;
}

std::optional<SettingsProblem> refinement_settings_problem(const RefinementSettings& settings) {
  if (settings.weight && !(std::isfinite(*settings.weight) && *settings.weight >= 0 &&
                           *settings.weight <= kMaxRegularizationWeight)) {
    std::ostringstream message;
    message << "regularization weight " << *settings.weight << " is outside 0.."
            << kMaxRegularizationWeight << " (dimensionless; default " << kDefaultTvWeight
            << " for tv, " << kDefaultTikhonovWeight << " for tikhonov)";
    return SettingsProblem{"bad_weight", message.str()};
  }
  if (!(std::isfinite(settings.discrepancy_factor) &&
        settings.discrepancy_factor >= kMinDiscrepancyFactor &&
        settings.discrepancy_factor <= kMaxDiscrepancyFactor)) {
    std::ostringstream message;
    message << "discrepancy factor " << settings.discrepancy_factor << " is outside "
            << kMinDiscrepancyFactor << ".." << kMaxDiscrepancyFactor << " (default 1)";
    return SettingsProblem{"bad_discrepancy_factor", message.str()};
  }
  if (settings.method == RefinementMethod::kCgls &&
      regularizer_of(settings) != solvers::Regularizer::kNone) {
    return SettingsProblem{"cgls_unregularized",
                           "method cgls takes no regulariser (it is plain least squares); use "
                           "method fista for tv or tikhonov"};
  }
  if (settings.weight && regularizer_of(settings) == solvers::Regularizer::kNone &&
      *settings.weight != 0) {
    return SettingsProblem{"weight_without_regularizer",
                           "a regularization weight needs a regulariser (tv or tikhonov)"};
  }
  return std::nullopt;
}

double target_residual(const RefinementRequest& request) {
  if (request.settings.stop != RefinementStopRule::kDiscrepancy || request.noise_level <= 0) {
    return 0;
  }
  return request.settings.discrepancy_factor * request.noise_level;
}

solvers::FistaOptions fista_options(const RefinementRequest& request, int width, int height,
                                    double lipschitz) {
  solvers::FistaOptions options;
  options.max_iterations = request.max_iterations;
  options.relative_tolerance = target_residual(request);
  options.non_negative = request.settings.non_negative;
  options.regularizer = regularizer_of(request.settings);
  options.weight = weight_of(request.settings);
  options.lipschitz = lipschitz;
  options.image_width = width;
  options.image_height = height;
  return options;
}

RefinementSummary summary_of(const RefinementRequest& request) {
  RefinementSummary summary;
  summary.method = request.max_iterations > 0 ? to_string(request.settings.method) : "residual";
  summary.regularizer = to_string(regularizer_of(request.settings));
  summary.weight = weight_of(request.settings);
  summary.non_negative = request.settings.non_negative;
  summary.noise_level = request.noise_level;
  summary.target_residual = target_residual(request);
  if (request.max_iterations == 0) summary.stop_reason = "residual_only";
  return summary;
}

}  // namespace slicestream
