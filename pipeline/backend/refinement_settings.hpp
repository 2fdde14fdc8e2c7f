// How a slice is refined (SetRefinement's settings) and what one refinement did, shared by the
// command, both backends' slice refiners and the reports (GetStatus, the refined publication).
//
// Methods (kernels/solvers): "fista" (the default) minimises 1/2 ||A x - b||^2 + R(x) with
// x >= 0 by accelerated projected gradient, R Tikhonov or smoothed total variation with a
// dimensionless weight (kernels/solvers/fista.hpp); "cgls" is plain CGLS on the data term (no
// regulariser; non_negative clips its result). Stopping: "discrepancy" (the default) stops at the
// first iterate whose relative residual ||A x - b|| / ||b|| reaches discrepancy_factor times the
// noise level the detector's counts imply (refinement_noise.hpp), else after `iterations`;
// "iterations" always runs them all (unless converged).
#pragma once

#include <optional>
#include <string>

#include "kernels/solvers/fista.hpp"
#include "pipeline/backend/name_table.hpp"

namespace slicestream {

enum class RefinementMethod { kFista, kCgls };
enum class RefinementStopRule { kDiscrepancy, kIterations };

// Defaults, chosen on docs/refinement.md's table (never worse than FBP there).
constexpr int kDefaultRefinementIterations = 50;  // at most, per refinement
constexpr double kDefaultTvWeight = 0.001;
constexpr double kDefaultTikhonovWeight = 0.01;
constexpr double kMaxRegularizationWeight = 10;
constexpr double kMinDiscrepancyFactor = 0.5;
constexpr double kMaxDiscrepancyFactor = 10;

struct RefinementSettings {
  RefinementMethod method = RefinementMethod::kFista;
  // Unset: total variation for fista, none for cgls.
  std::optional<solvers::Regularizer> regularizer;
  std::optional<double> weight;  // unset: the regulariser's default (0 without one)
  bool non_negative = true;
  RefinementStopRule stop = RefinementStopRule::kDiscrepancy;
  double discrepancy_factor = 1.0;  // tau: stop at tau x the noise level
};

// Header-only like the names below: the server's codecs use them without linking the pipeline.
inline bool operator==(const RefinementSettings& a, const RefinementSettings& b) {
  return a.method == b.method && a.regularizer == b.regularizer && a.weight == b.weight &&
         a.non_negative == b.non_negative && a.stop == b.stop &&
         a.discrepancy_factor == b.discrepancy_factor;
}

// Plain CGLS for a fixed number of iterations, unbounded: the refinement before regularisation
// and bounds existed (comparisons, tests).
RefinementSettings plain_cgls_settings();

// The regulariser and weight the settings mean (defaults filled in).
inline solvers::Regularizer regularizer_of(const RefinementSettings& settings) {
  if (settings.regularizer) return *settings.regularizer;
  return settings.method == RefinementMethod::kFista ? solvers::Regularizer::kTotalVariation
                                                     : solvers::Regularizer::kNone;
}
inline double weight_of(const RefinementSettings& settings) {
  switch (regularizer_of(settings)) {
    case solvers::Regularizer::kTotalVariation:
      return settings.weight.value_or(kDefaultTvWeight);
    case solvers::Regularizer::kTikhonov:
      return settings.weight.value_or(kDefaultTikhonovWeight);
    case solvers::Regularizer::kNone:
      return 0;
  }
  return 0;
}

// Why the settings are invalid (reason, message), or nothing: the one check of SetRefinement's
// settings (weights finite in [0, kMaxRegularizationWeight], the factor in its range, no
// regulariser with cgls).
struct SettingsProblem {
  std::string reason;
  std::string message;
};
std::optional<SettingsProblem> refinement_settings_problem(const RefinementSettings& settings);

// The names of the settings' values (the wire's strings, ctl's flags, logs): header-only, so
// that the server's codecs check them without linking the pipeline.
inline constexpr NameTable<RefinementMethod, 2> kMethodNames = {{
    {RefinementMethod::kFista, "fista"},
    {RefinementMethod::kCgls, "cgls"},
}};
inline constexpr NameTable<RefinementStopRule, 2> kStopRuleNames = {{
    {RefinementStopRule::kDiscrepancy, "discrepancy"},
    {RefinementStopRule::kIterations, "iterations"},
}};
inline constexpr NameTable<solvers::Regularizer, 3> kRegularizerNames = {{
    {solvers::Regularizer::kTotalVariation, "tv"},
    {solvers::Regularizer::kTikhonov, "tikhonov"},
    {solvers::Regularizer::kNone, "none"},
}};
inline constexpr NameTable<solvers::StopReason, 3> kStopReasonNames = {{
    {solvers::StopReason::kDiscrepancy, "discrepancy"},
    {solvers::StopReason::kMaxIterations, "max_iterations"},
    {solvers::StopReason::kConverged, "converged"},
}};

inline const char* to_string(RefinementMethod method) {
  return name_in(kMethodNames, method);
}
inline const char* to_string(RefinementStopRule stop) {
  return name_in(kStopRuleNames, stop);
}
inline const char* to_string(solvers::Regularizer regularizer) {
  return name_in(kRegularizerNames, regularizer);
}
inline const char* to_string(solvers::StopReason reason) {
  return name_in(kStopReasonNames, reason);
}
// "fista|cgls" and so on, for help texts and error messages.
inline std::string refinement_method_names() {
  return names_in(kMethodNames);
}
inline std::string refinement_stop_rule_names() {
  return names_in(kStopRuleNames);
}
inline std::string regularizer_names() {
  return names_in(kRegularizerNames);
}

// What a refiner is asked to do.
struct RefinementRequest {
  int max_iterations = 0;  // 0: the residual of the start image only
  RefinementSettings settings;
  // Expected ||noise|| / ||b|| of the sinogram from the detector's counts; < 0: unknown.
  double noise_level = -1;
};

// What one refinement did, beside its residuals.
struct RefinementSummary {
  std::string method;       // "fista", "cgls"; "residual" when only the residual was measured
  std::string regularizer;  // "tv", "tikhonov", "none"
  double weight = 0;        // the dimensionless weight used
  bool non_negative = false;
  // "discrepancy", "max_iterations", "converged", "residual_only".
  std::string stop_reason;
  double noise_level = -1;     // as requested; < 0: unknown
  double target_residual = 0;  // the discrepancy level it aimed for; 0: none
};

// The relative tolerance a request's stopping rule sets (0: none).
double target_residual(const RefinementRequest& request);
// The FISTA options of a request for an image of width x height; `lipschitz` as known so far.
solvers::FistaOptions fista_options(const RefinementRequest& request, int width, int height,
                                    double lipschitz);
// The summary of a request that ran (method, regulariser, weight, bounds, noise, target);
// stop_reason is left to the caller.
RefinementSummary summary_of(const RefinementRequest& request);

}  // namespace slicestream
