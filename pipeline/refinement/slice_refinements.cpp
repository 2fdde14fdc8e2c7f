// SliceRefinements: commands, scan lifecycle, planning and the data path
// (slice_refinements.hpp).
#include "pipeline/refinement/slice_refinements.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "pipeline/refinement/refiner_sharing.hpp"

namespace slicestream {
namespace {

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

// "at most 50 fista iterations (tv weight 0.002, x >= 0) from the FBP image, stopping at the
// noise level".
std::string describe(const RefinementSettings& settings, int iterations) {
  std::ostringstream out;
  out << "at most " << iterations << " " << to_string(settings.method) << " iterations (";
  const solvers::Regularizer regularizer = regularizer_of(settings);
  if (regularizer == solvers::Regularizer::kNone) {
    out << "no regulariser";
  } else {
    out << to_string(regularizer) << " weight " << weight_of(settings);
  }
  out << (settings.non_negative ? ", x >= 0" : ", unbounded") << ") from the FBP image";
  if (settings.stop == RefinementStopRule::kDiscrepancy) {
    out << ", stopping at ";
    if (settings.discrepancy_factor != 1) out << settings.discrepancy_factor << " x ";
    out << "the noise level of the detector's counts";
  }
  return out.str();
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
  const bool refined = existing != entries_.end() && existing->second.refinement;
  if (!command.enabled) {
    if (slice == nullptr && existing == entries_.end()) {
      return refusal(StatusCode::kNotFound, "unknown_slice",
                     "no slice with id " + std::to_string(id));
    }
    if (!refined)
      return Status{StatusCode::kOk, "slice " + std::to_string(id) + " was not refined", {}};
    Entry& entry = existing->second;
    entry.refinement.reset();
    entry.generation = next_generation_++;  // a refinement in flight no longer applies
    entry.last = RefinementStatus{};
    entry.failure.clear();
    replan_all();  // its window and matrix now serve the automatic check, if those are on
    return Status{
        StatusCode::kOk, "refinement of slice " + std::to_string(id) + " switched off", {}};
  }
  if (command.iterations < 0 || command.iterations > limits_.max_iterations) {
    return refusal(StatusCode::kInvalidArgument,
                   command.iterations < 0 ? "bad_iterations" : "too_many_iterations",
                   "iterations=" + std::to_string(command.iterations) + " is outside 0.." +
                       std::to_string(limits_.max_iterations) + " (0: residual only)");
  }
  if (auto problem = refinement_settings_problem(command.settings)) {
    return refusal(StatusCode::kInvalidArgument, problem->reason.c_str(), problem->message);
  }
  if (!std::isfinite(command.interval_s) || command.interval_s < 0 ||
      command.interval_s > kMaxIntervalS) {
    return refusal(StatusCode::kInvalidArgument, "bad_interval",
                   "interval_s must be finite and within [0, " +
                       std::to_string(static_cast<int>(kMaxIntervalS)) + "] seconds");
  }
  if (slice == nullptr) {
    return refusal(StatusCode::kNotFound, "unknown_slice",
                   "no slice with id " + std::to_string(id) +
                       "; set it with SetSlice first (the default slices 0, 1, 2 appear when a "
                       "scan starts)");
  }
  AxialSliceFrame frame;
  if (auto problem = axial_slice_frame(*slice, &frame)) return refusal(*problem);
  // An automatic check of the same slice already holds (or is about to hold) the matrix.
  const bool planned = existing != entries_.end() && existing->second.plan &&
                       same_place(existing->second.slice, *slice);
  if (scan_) {
    RefinementPlan plan;
    if (auto problem =
            plan_refinement(*slice, with_rotation_axis_offset(geometry_, offset_px_), &plan)) {
      return refusal(*problem);
    }
    if (auto problem = check_matrix(plan)) return refusal(*problem);
    if (!planned) {
      if (!backend_.host_memory()->fits(window_bytes(*slice))) {
        return refusal(StatusCode::kResourceExhausted, "memory_budget",
                       backend_.host_memory()->shortfall(
                           window_bytes(*slice), "the slice's sinogram window and its snapshot"));
      }
      if (auto problem = check_memory(plan)) return refusal(*problem);
    }
  }
  const auto refined_slices = std::count_if(entries_.begin(), entries_.end(),
                                            [](const auto& e) { return e.second.refinement; });
  if (!refined && refined_slices >= limits_.max_slices) {
    return refusal(StatusCode::kResourceExhausted, "too_many_refinements",
                   "at most " + std::to_string(limits_.max_slices) +
                       " slices are refined at once; switch one off first");
  }
  Entry& entry = entries_[id];
  // An automatic check of the same slice hands its window and matrix to the refinement.
  const bool same_slice = existing != entries_.end() && same_place(existing->second.slice, *slice);
  entry.refinement = command;
  entry.slice = *slice;
  entry.generation = next_generation_++;
  entry.submitted_any = false;  // refine at once with the new settings
  entry.last_start = Clock::time_point{};
  entry.retry_after = Clock::time_point{};
  entry.failure.clear();
  if (!same_slice) {
    entry.plan.reset();  // a new slice needs a new window
    drop_matrix(entry);
  }
  replan_all();
  std::ostringstream message;
  message << "slice " << id << ": ";
  if (command.iterations > 0) {
    message << describe(command.settings, command.iterations);
  } else {
    message << "data-consistency residual of the FBP image";
  }
  if (command.interval_s > 0) {
    message << " at most every " << command.interval_s << " s";
  } else {
    message << " whenever new projections have arrived";
  }
  if (!scan_) {
    message << "; starts when a scan starts";
  } else if (entry.window.complete()) {
    message << " (scan " << scan_id_ << (scan_running_ ? "" : ", ended") << ", window of "
            << entry.window.slots() << " projections)";
  } else if (scan_running_) {
    message << "; collecting the sinogram rows of the next " << entry.window.slots()
            << " projections of scan " << scan_id_ << " first";
  } else {
    message << "; scan " << scan_id_
            << " has ended before its sinogram rows were collected: starts with the next scan";
  }
  return Status{StatusCode::kOk, message.str(), {}};
}

void SliceRefinements::slice_changed(const SetSliceCommand& slice) {
  const auto [it, added] = entries_.try_emplace(slice.slice_id);
  Entry& entry = it->second;
  if (!added && same_place(entry.slice, slice)) return;  // set again where it was
  entry.slice = slice;
  forget_results(slice.slice_id, entry);
  entry.plan.reset();
  drop_matrix(entry);
  replan_all();
  if (!added && entry.refinement && entry.unavailable) {
    events_.warning(
        "refinement_unavailable",
        "slice " + std::to_string(slice.slice_id) + " moved: " + entry.unavailable->message,
        scan_id_);
  }
}

void SliceRefinements::slice_removed(std::uint32_t slice_id) {
  if (entries_.erase(slice_id) == 0) return;
  metrics_.forget_slice_residual(slice_id);
  replan_all();  // its share of the check budget is free again
}

// ------------------------------------------------------------------------------ scan

void SliceRefinements::begin_scan(std::uint64_t scan_id, const ScanGeometry& geometry,
                                  double offset_px, const std::vector<SetSliceCommand>& slices) {
  scan_ = true;
  scan_running_ = true;
  scan_id_ = scan_id;
  geometry_ = geometry;
  offset_px_ = offset_px;
  open_beam_.clear();  // until the scan's calibration arrives
  std::map<std::uint32_t, Entry> live;
  for (const SetSliceCommand& spec : slices) {
    Entry& entry = live[spec.slice_id];
    const auto old = entries_.find(spec.slice_id);
    if (old != entries_.end()) entry = std::move(old->second);
    entry.slice = spec;
    forget_results(spec.slice_id, entry);
    entry.plan.reset();  // the store starts empty
  }
  for (const auto& [id, entry] : entries_) {
    if (live.count(id) == 0) metrics_.forget_slice_residual(id);
  }
  entries_ = std::move(live);
  replan_all();
  for (const auto& [id, entry] : entries_) {
    if (entry.refinement && entry.unavailable) {
      events_.warning("refinement_unavailable",
                      "slice " + std::to_string(id) +
                          " is not refined in this scan: " + entry.unavailable->message,
                      scan_id);
    }
  }
}

void SliceRefinements::release_scan() {
  scan_ = false;
  scan_running_ = false;
  for (auto& [id, entry] : entries_) {
    entry.window.reset(0, 0);
    entry.memory.reset();
    entry.generation = next_generation_++;
  }
  replan_all();  // no plans without a scan; the orientations are still checked
}

void SliceRefinements::set_calibration(const std::vector<float>& dark,
                                       const std::vector<float>& flat) {
  open_beam_.set(dark, flat, geometry_.detector.rows, geometry_.detector.cols);
  if (!flat.empty() && !open_beam_.known()) {
    spdlog::info(
        "scan {}: the flat fields do not look like photon counts (mean open beam below "
        "{}); refinement's discrepancy stop has no noise level",
        scan_id_, kMinOpenBeamCounts);
  }
}

void SliceRefinements::set_rotation_axis_offset(double offset_px) {
  offset_px_ = offset_px;
  // The offset moves the detector along its rows: the sinogram rows stay, the matrix changes
  // (the setup differs, so the worker rebuilds it with the next job).
  for (auto& [id, entry] : entries_)
    entry.submitted_any = false;
  replan_all();
}

void SliceRefinements::on_projection(int slot, const ProjectionVector& vector,
                                     const CapturedRows& captured) {
  if (!scan_ || slot < 0 || static_cast<std::size_t>(slot) >= geometry_.vectors.size()) return;
  geometry_.vectors[static_cast<std::size_t>(slot)] = vector;
  // What preprocessing weighted the projection with (it used `vector` too).
  const CosineWeight preweight = make_cosine_weight(geometry_.beam, vector, geometry_.detector);
  for (auto& [id, entry] : entries_) {
    if (entry.plan) entry.window.store(slot, *entry.plan, captured, preweight);
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

std::optional<RefinementProblem> SliceRefinements::check_matrix(const RefinementPlan& plan,
                                                                RefinementSetup* setup_out,
                                                                std::size_t* bytes) const {
  RefinementSetup setup;
  try {
    setup = refinement_setup(plan, window_geometry());
  } catch (const std::invalid_argument& e) {
    return RefinementProblem{StatusCode::kFailedPrecondition, "rays_not_in_slice_plane", e.what()};
  }
  const std::size_t estimate = estimated_matrix_bytes(setup);
  if (bytes != nullptr) *bytes = estimate;
  if (setup_out != nullptr) *setup_out = std::move(setup);
  if (estimate <= limits_.max_matrix_bytes) return std::nullopt;
  return RefinementProblem{StatusCode::kResourceExhausted, "matrix_too_large",
                           "the system matrix of this " + std::to_string(plan.frame.grid.width) +
                               " x " + std::to_string(plan.frame.grid.height) + " slice and " +
                               std::to_string(setup.geometry.angles()) +
                               " projections needs about " + mib(estimate) +
                               ", over the limit of " + mib(limits_.max_matrix_bytes) +
                               " (--max-refine-matrix); refine a smaller slice"};
}

std::optional<RefinementProblem> SliceRefinements::check_memory(const RefinementPlan& plan) const {
  const std::string problem =
      backend_.refiner_memory_problem(refinement_setup(plan, window_geometry()));
  if (problem.empty()) return std::nullopt;
  return RefinementProblem{StatusCode::kResourceExhausted, "out_of_memory",
                           "the backend has no room for this slice's refiner: " + problem};
}

int SliceRefinements::iterations(const Entry& entry) const {
  return entry.refinement ? entry.refinement->iterations : 0;
}

double SliceRefinements::interval_s(const Entry& entry) const {
  return entry.refinement ? entry.refinement->interval_s : limits_.residual_interval_s;
}

bool SliceRefinements::wanted(const Entry& entry) const {
  return entry.refinement || limits_.residual_interval_s > 0;
}

void SliceRefinements::replan_all() {
  MatrixBudget budget;
  std::vector<RefinerCacheUser> planned;
  // Refinements first: their matrices are built anyway, so checks of the same problem are free.
  for (const bool refined : {true, false}) {
    for (auto& [id, entry] : entries_) {
      if (static_cast<bool>(entry.refinement) != refined) continue;
      RefinementSetup setup;
      if (replan(entry, budget, &setup)) planned.push_back({std::move(setup), &entry.cache});
    }
  }
  share_refiner_caches(planned, busy_cache_.get());
  if (scan_) arm_checks(Clock::now());  // due ones capture from the scan's first projections
  update_row_selection();
}

bool SliceRefinements::replan(Entry& entry, MatrixBudget& budget, RefinementSetup* setup) {
  const std::optional<RefinementPlan> old = entry.plan;
  entry.plan.reset();
  entry.unavailable.reset();
  if (!wanted(entry)) {
    entry.window.reset(0, 0);
    entry.memory.reset();
    drop_matrix(entry);
    return false;
  }
  if (!scan_) {
    // Without a scan only the orientation can be checked (the slice may have moved).
    AxialSliceFrame frame;
    entry.unavailable = axial_slice_frame(entry.slice, &frame);
    return false;
  }
  RefinementPlan plan;
  std::size_t bytes = 0;
  std::optional<RefinementProblem> problem =
      plan_refinement(entry.slice, with_rotation_axis_offset(geometry_, offset_px_), &plan);
  if (!problem) problem = check_matrix(plan, setup, &bytes);
  // A problem planned before (a refinement's or another slice's) adds no matrix.
  const bool counted = !problem && std::find(budget.setups.begin(), budget.setups.end(), *setup) !=
                                       budget.setups.end();
  if (!problem && !counted && !entry.refinement) {
    if (budget.check_bytes + bytes > limits_.max_matrix_bytes) {
      problem = RefinementProblem{
          StatusCode::kResourceExhausted, "matrix_budget_full",
          "the automatic residual checks of slices with lower ids already take " +
              mib(budget.check_bytes) + " of the " + mib(limits_.max_matrix_bytes) +
              " their matrices may use; this one needs about " + mib(bytes)};
    } else {
      budget.check_bytes += bytes;
    }
  }
  if (!problem && !counted) budget.setups.push_back(*setup);
  if (!problem) problem = charge_window(entry);
  if (problem) {
    entry.unavailable = std::move(problem);
    entry.window.reset(0, 0);
    entry.memory.reset();
    drop_matrix(entry);
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

std::size_t SliceRefinements::window_bytes(const SetSliceCommand& slice) const {
  const std::size_t window =
      geometry_.vectors.size() * static_cast<std::size_t>(geometry_.detector.cols);
  const std::size_t image =
      static_cast<std::size_t>(slice.width) * static_cast<std::size_t>(slice.height);
  return (2 * window + image) * sizeof(float);
}

std::optional<RefinementProblem> SliceRefinements::charge_window(Entry& entry) {
  const std::size_t bytes = window_bytes(entry.slice);
  if (entry.memory && entry.memory->bytes() == bytes) return std::nullopt;
  const std::size_t replaced = entry.memory ? entry.memory->bytes() : 0;
  std::shared_ptr<MemoryCharge> charge = backend_.host_memory()->try_charge(bytes, replaced);
  if (!charge) {
    return RefinementProblem{
        StatusCode::kResourceExhausted, "memory_budget",
        backend_.host_memory()->shortfall(bytes, "the slice's sinogram window and its snapshot")};
  }
  entry.memory = std::move(charge);
  return std::nullopt;
}

void SliceRefinements::forget_results(std::uint32_t id, Entry& entry) {
  entry.generation = next_generation_++;
  entry.submitted_any = false;
  entry.failure.clear();
  entry.last = RefinementStatus{};
  entry.residual = SliceResidual{};
  metrics_.forget_slice_residual(id);
}

void SliceRefinements::drop_matrix(Entry& entry) {
  // A new cache rather than a reset one: a running job may still use the old one.
  entry.cache = std::make_shared<RefinerCache>();
}

void SliceRefinements::reset_window(Entry& entry) {
  entry.window.reset(static_cast<int>(geometry_.vectors.size()), geometry_.detector.cols);
  entry.lagging_until = {};
}

bool SliceRefinements::captures(const Entry& entry) {
  return entry.plan && (entry.refinement || entry.capturing);
}

void SliceRefinements::update_row_selection() {
  std::set<int> rows;
  for (const auto& [id, entry] : entries_) {
    if (!captures(entry)) continue;
    rows.insert(entry.plan->row_low);
    rows.insert(entry.plan->row_high);
  }
  rows_.set(std::vector<int>(rows.begin(), rows.end()));
}

}  // namespace slicestream
