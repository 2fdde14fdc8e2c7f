// SliceRefinements: commands, scan lifecycle and the data path (slice_refinements.hpp).
#include "pipeline/slice_refinements.hpp"

#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace slicestream {
namespace {

constexpr double kMaxIntervalS = 86400;

Status refusal(StatusCode code, const char* reason, std::string message) {
  return Status{code, std::move(message), reason};
}

Status refusal(const RefinementProblem& problem) {
  return Status{problem.code, problem.message, problem.reason};
}

bool same_place(const SetSliceCommand& a, const SetSliceCommand& b) {
  return a.width == b.width && a.height == b.height && a.orientation.values == b.orientation.values;
}

std::string mib(std::size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

SliceRefinements::SliceRefinements(const RefinementLimits& limits, Backend& backend,
                                   MetricsRegistry& metrics, EventReporter& events,
                                   DetectorRowSelection& rows)
    : limits_(limits),
      backend_(backend),
      metrics_(metrics),
      events_(events),
      rows_(rows),
      worker_(backend) {}

// ------------------------------------------------------------------------------ commands

Status SliceRefinements::configure(const SetRefinementCommand& command,
                                   const SetSliceCommand* slice) {
  const std::uint32_t id = command.slice_id;
  const auto existing = entries_.find(id);
  if (!command.enabled) {
    if (slice == nullptr && existing == entries_.end()) {
      return refusal(StatusCode::kNotFound, "unknown_slice",
                     "no slice with id " + std::to_string(id));
    }
    if (existing == entries_.end())
      return Status{StatusCode::kOk, "slice " + std::to_string(id) + " was not refined", {}};
    entries_.erase(existing);
    update_row_selection();
    return Status{
        StatusCode::kOk, "refinement of slice " + std::to_string(id) + " switched off", {}};
  }
  if (command.iterations < 0 || command.iterations > limits_.max_iterations) {
    return refusal(StatusCode::kInvalidArgument,
                   command.iterations < 0 ? "bad_iterations" : "too_many_iterations",
                   "iterations=" + std::to_string(command.iterations) + " is outside 0.." +
                       std::to_string(limits_.max_iterations) + " (0: residual only)");
  }
  if (!std::isfinite(command.interval_s) || command.interval_s < 0 ||
      command.interval_s > kMaxIntervalS) {
    return refusal(StatusCode::kInvalidArgument, "bad_interval",
                   "interval_s must be finite and within [0, 86400] seconds");
  }
  if (slice == nullptr) {
    return refusal(StatusCode::kNotFound, "unknown_slice",
                   "no slice with id " + std::to_string(id) +
                       "; set it with SetSlice first (the default slices 0, 1, 2 appear when a "
                       "scan starts)");
  }
  AxialSliceFrame frame;
  if (auto problem = axial_slice_frame(*slice, &frame)) return refusal(*problem);
  if (scan_) {
    RefinementPlan plan;
    if (auto problem =
            plan_refinement(*slice, with_rotation_axis_offset(geometry_, offset_px_), &plan)) {
      return refusal(*problem);
    }
    if (auto problem = check_matrix(plan)) return refusal(*problem);
  }
  if (existing == entries_.end() && static_cast<int>(entries_.size()) >= limits_.max_slices) {
    return refusal(StatusCode::kResourceExhausted, "too_many_refinements",
                   "at most " + std::to_string(limits_.max_slices) +
                       " slices are refined at once; switch one off first");
  }
  Entry& entry = entries_[id];
  const bool same_slice = existing != entries_.end() && same_place(existing->second.slice, *slice);
  entry.settings = command;
  entry.slice = *slice;
  entry.generation = next_generation_++;
  entry.submitted_any = false;  // refine at once with the new settings
  entry.last_start = Clock::time_point{};
  entry.retry_after = Clock::time_point{};
  if (!same_slice) entry.plan.reset();  // a new slice needs a new window
  replan(entry);
  update_row_selection();
  std::ostringstream message;
  message << "slice " << id << ": ";
  if (command.iterations > 0) {
    message << command.iterations << " CGLS iterations from the FBP image";
  } else {
    message << "data-consistency residual of the FBP image";
  }
  message << " at most every " << command.interval_s << " s";
  if (!scan_) {
    message << "; starts when a scan starts";
  } else if (!entry.window.complete()) {
    message << "; collecting the sinogram rows of the next " << entry.window.slots()
            << " projections first";
  }
  return Status{StatusCode::kOk, message.str(), {}};
}

void SliceRefinements::slice_changed(const SetSliceCommand& slice) {
  const auto it = entries_.find(slice.slice_id);
  if (it == entries_.end()) return;
  Entry& entry = it->second;
  if (same_place(entry.slice, slice)) return;  // set again where it was: nothing to redo
  entry.slice = slice;
  entry.generation = next_generation_++;
  entry.submitted_any = false;
  entry.plan.reset();
  if (!replan(entry) && !entry.unavailable.empty()) {
    events_.warning("refinement_unavailable",
                    "slice " + std::to_string(slice.slice_id) + " moved: " + entry.unavailable,
                    scan_id_);
  }
  update_row_selection();
}

void SliceRefinements::slice_removed(std::uint32_t slice_id) {
  if (entries_.erase(slice_id) > 0) update_row_selection();
}

std::vector<RefinementStatus> SliceRefinements::status() const {
  std::vector<RefinementStatus> out;
  for (const auto& [id, entry] : entries_) {
    RefinementStatus s = entry.last;
    s.slice_id = id;
    s.iterations = entry.settings.iterations;
    s.interval_s = entry.settings.interval_s;
    s.window_filled = entry.window.filled();
    s.window_size = entry.window.slots();
    s.detector_row = entry.plan ? entry.plan->detector_row : 0;
    if (!entry.unavailable.empty()) {
      s.state = "unavailable";
      s.detail = entry.unavailable;
    } else if (!scan_) {
      s.state = "waiting_for_scan";
    } else if (!entry.plan) {
      s.state = "unavailable";
    } else if (entry.in_flight) {
      s.state = worker_.phase() == RefinementWorker::Phase::kBuildingMatrix ? "building_matrix"
                                                                            : "running";
    } else if (!entry.window.complete()) {
      s.state = "collecting";
    } else {
      s.state = "ready";
    }
    out.push_back(std::move(s));
  }
  return out;
}

// ------------------------------------------------------------------------------ scan

void SliceRefinements::begin_scan(std::uint64_t scan_id, const ScanGeometry& geometry,
                                  double offset_px, const std::vector<SetSliceCommand>& slices) {
  scan_ = true;
  scan_id_ = scan_id;
  geometry_ = geometry;
  offset_px_ = offset_px;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const SetSliceCommand* spec = nullptr;
    for (const SetSliceCommand& s : slices) {
      if (s.slice_id == it->first) spec = &s;
    }
    if (spec == nullptr) {
      it = entries_.erase(it);
      continue;
    }
    Entry& entry = it->second;
    entry.slice = *spec;
    entry.generation = next_generation_++;
    entry.submitted_any = false;
    entry.last = RefinementStatus{};
    entry.plan.reset();  // the store starts empty
    if (!replan(entry)) {
      events_.warning("refinement_unavailable",
                      "slice " + std::to_string(it->first) +
                          " is not refined in this scan: " + entry.unavailable,
                      scan_id);
    }
    ++it;
  }
  update_row_selection();
}

void SliceRefinements::release_scan() {
  scan_ = false;
  for (auto& [id, entry] : entries_) {
    replan(entry);  // no plan without a scan; the orientation is still checked
    entry.window.reset(0, 0);
    entry.generation = next_generation_++;
  }
  update_row_selection();
}

void SliceRefinements::set_rotation_axis_offset(double offset_px) {
  offset_px_ = offset_px;
  // The offset moves the detector along its rows: the sinogram rows stay, the matrix changes
  // (the setup differs, so the worker rebuilds it with the next refinement).
  for (auto& [id, entry] : entries_) {
    entry.submitted_any = false;
    replan(entry);
  }
  update_row_selection();
}

void SliceRefinements::on_projection(int slot, const ProjectionVector& vector,
                                     const CapturedRows& captured) {
  if (!scan_ || slot < 0 || static_cast<std::size_t>(slot) >= geometry_.vectors.size()) return;
  geometry_.vectors[static_cast<std::size_t>(slot)] = vector;
  for (auto& [id, entry] : entries_) {
    if (entry.plan) entry.window.store(slot, *entry.plan, captured);
  }
}

void SliceRefinements::lose_slot(int slot) {
  for (auto& [id, entry] : entries_)
    entry.window.clear_slot(slot);
}

// ------------------------------------------------------------------------------ planning

ScanGeometry SliceRefinements::window_geometry() const {
  return offset_px_ != 0 ? with_rotation_axis_offset(geometry_, offset_px_) : geometry_;
}

std::optional<RefinementProblem> SliceRefinements::check_matrix(const RefinementPlan& plan) const {
  RefinementSetup setup;
  try {
    setup = refinement_setup(plan, window_geometry());
  } catch (const std::invalid_argument& e) {
    return RefinementProblem{StatusCode::kFailedPrecondition, "rays_not_in_slice_plane", e.what()};
  }
  const std::size_t bytes = estimated_matrix_bytes(setup);
  if (bytes <= limits_.max_matrix_bytes) return std::nullopt;
  return RefinementProblem{StatusCode::kResourceExhausted, "matrix_too_large",
                           "the system matrix of this " + std::to_string(plan.frame.grid.width) +
                               " x " + std::to_string(plan.frame.grid.height) + " slice and " +
                               std::to_string(setup.geometry.angles()) +
                               " projections needs about " + mib(bytes) + ", over the limit of " +
                               mib(limits_.max_matrix_bytes) +
                               " (--max-refine-matrix); refine a smaller slice"};
}

bool SliceRefinements::replan(Entry& entry) {
  const std::optional<RefinementPlan> old = entry.plan;
  entry.plan.reset();
  entry.unavailable.clear();
  if (!scan_) {
    // Without a scan only the orientation can be checked (the slice may have moved).
    AxialSliceFrame frame;
    if (auto problem = axial_slice_frame(entry.slice, &frame)) entry.unavailable = problem->message;
    return false;
  }
  RefinementPlan plan;
  std::optional<RefinementProblem> problem =
      plan_refinement(entry.slice, with_rotation_axis_offset(geometry_, offset_px_), &plan);
  if (!problem) problem = check_matrix(plan);
  if (problem) {
    entry.unavailable = problem->message;
    entry.window.reset(0, 0);
    return false;
  }
  entry.plan = plan;
  const bool same_rows = old && old->row_low == plan.row_low && old->row_high == plan.row_high &&
                         old->weight_high == plan.weight_high;
  if (!same_rows || entry.window.slots() != static_cast<int>(geometry_.vectors.size())) {
    reset_window(entry);
  }
  return true;
}

void SliceRefinements::reset_window(Entry& entry) {
  entry.window.reset(static_cast<int>(geometry_.vectors.size()), geometry_.detector.cols);
  entry.blocked = false;
}

void SliceRefinements::update_row_selection() {
  std::set<int> rows;
  for (const auto& [id, entry] : entries_) {
    if (!entry.plan) continue;
    rows.insert(entry.plan->row_low);
    rows.insert(entry.plan->row_high);
  }
  rows_.set(std::vector<int>(rows.begin(), rows.end()));
}

}  // namespace slicestream
