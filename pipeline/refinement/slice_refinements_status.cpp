// SliceRefinements: what GetStatus reports (slice_refinements.hpp).
#include "pipeline/refinement/slice_refinements.hpp"

namespace slicestream {

std::string SliceRefinements::state_of(const Entry& entry) const {
  if (!wanted(entry)) return "off";
  if (entry.unavailable || (scan_ && !entry.plan)) return "unavailable";
  if (!scan_) return "waiting_for_scan";
  if (entry.in_flight) {
    return worker_.phase() == RefinementWorker::Phase::kBuildingMatrix ? "building_matrix"
                                                                       : "running";
  }
  if (!entry.refinement && !entry.capturing) return "waiting";  // for the next check
  return entry.window.complete() ? "ready" : "collecting";
}

std::vector<RefinementStatus> SliceRefinements::status() const {
  std::vector<RefinementStatus> out;
  for (const auto& [id, entry] : entries_) {
    if (!entry.refinement) continue;
    RefinementStatus s = entry.last;
    s.slice_id = id;
    s.iterations = entry.refinement->iterations;
    s.interval_s = entry.refinement->interval_s;
    s.settings = entry.refinement->settings;
    s.state = state_of(entry);
    s.detail = entry.unavailable ? entry.unavailable->message : entry.failure;
    s.window_filled = entry.window.filled();
    s.window_size = entry.window.slots();
    s.detector_row = entry.plan ? entry.plan->detector_row : 0;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SliceResidual> SliceRefinements::residuals(Clock::time_point now) const {
  std::vector<SliceResidual> out;
  for (const auto& [id, entry] : entries_) {
    SliceResidual r = entry.residual;
    r.slice_id = id;
    r.source = entry.refinement ? "refinement" : "check";
    r.interval_s = interval_s(entry);
    r.state = state_of(entry);
    if (r.has_residual) r.age_s = std::chrono::duration<double>(now - entry.residual_at).count();
    if (r.state == "off") {
      r.reason = "checks_off";
      r.detail = "automatic residual checks are switched off (residual interval 0)";
    } else if (entry.unavailable) {
      r.reason = entry.unavailable->reason;
      r.detail = entry.unavailable->message;
    } else {
      r.detail = entry.failure;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace slicestream
