// The reconstruct stage's commands: slice set changes, one-shot slices, status, parameters.
#include <spdlog/spdlog.h>

#include <cmath>
#include <sstream>

#include "pipeline/stages/reconstructor.hpp"
#include "pipeline/stages/scan_validation.hpp"

namespace slicestream {
namespace {

CommandReply reply(StatusCode code, std::string message) {
  CommandReply r;
  r.status = Status{code, std::move(message)};
  return r;
}

bool is_valid(FilterWindow window) {
  switch (window) {
    case FilterWindow::kRamLak:
    case FilterWindow::kSheppLogan:
    case FilterWindow::kCosine:
    case FilterWindow::kHamming:
    case FilterWindow::kHann:
      return true;
  }
  return false;
}

bool is_valid(WindowMode mode) {
  return mode == WindowMode::kSlidingWindow || mode == WindowMode::kPerRotation;
}

// Empty when every field that is set lies in its range.
std::string parameters_problem(const SetParametersCommand& c) {
  if (c.filter) {
    if (!is_valid(c.filter->window)) return "unknown filter window";
    if (!std::isfinite(c.filter->cutoff) || !(c.filter->cutoff > 0) || c.filter->cutoff > 1) {
      return "filter cutoff must lie in (0, 1] (a fraction of Nyquist)";
    }
  }
  if (c.window_mode && !is_valid(*c.window_mode)) return "unknown window mode";
  if (c.rotation_axis_offset_px && (!std::isfinite(*c.rotation_axis_offset_px) ||
                                    std::abs(*c.rotation_axis_offset_px) > kMaxDetectorSide)) {
    return "rotation axis offset must be finite and at most " + std::to_string(kMaxDetectorSide) +
           " pixels";
  }
  if (c.publish_rate_hz && (!std::isfinite(*c.publish_rate_hz) || *c.publish_rate_hz < 0)) {
    return "publish rate must be finite and >= 0 (0 = every update)";
  }
  if (c.preview_interval_s &&
      (!std::isfinite(*c.preview_interval_s) || *c.preview_interval_s < 0)) {
    return "preview interval must be finite and >= 0";
  }
  return {};
}

}  // namespace

void Reconstructor::on_command(CommandItem& item) {
  CommandReply result;
  try {
    result = std::visit(
        [&](const auto& command) -> CommandReply {
          using T = std::decay_t<decltype(command)>;
          if constexpr (std::is_same_v<T, SetSliceCommand>) return set_slice(command);
          if constexpr (std::is_same_v<T, RemoveSliceCommand>) return remove_slice(command);
          if constexpr (std::is_same_v<T, GetSliceCommand>) return get_slice(command);
          if constexpr (std::is_same_v<T, GetStatusCommand>) return get_status();
          if constexpr (std::is_same_v<T, SetParametersCommand>) return set_parameters(command);
          if constexpr (std::is_same_v<T, SetRefinementCommand>) return set_refinement(command);
        },
        item.command);
  } catch (const BackendError& e) {
    events_.error("backend_error", std::string("command failed: ") + e.what(), scan_.scan_id);
    result = reply(StatusCode::kInternal, e.what());
  } catch (const std::exception& e) {
    events_.error("internal_error", std::string("command failed: ") + e.what(), scan_.scan_id);
    result = reply(StatusCode::kInternal, e.what());
  }
  if (!result.status.ok() && !result.status.reason.empty()) {
    metrics_.add_request_refusal(result.status.reason);
  }
  if (!item.on_reply) return;
  try {
    item.on_reply(std::move(result));
  } catch (const std::exception& e) {
    spdlog::error("a command reply callback threw: {}", e.what());
  }
}

Status Reconstructor::validate_slice_size(int width, int height) const {
  if (width < 1 || height < 1 || width > config_.max_slice_side ||
      height > config_.max_slice_side) {
    return Status{StatusCode::kInvalidArgument, "slice size " + std::to_string(width) + " x " +
                                                    std::to_string(height) + " outside 1.." +
                                                    std::to_string(config_.max_slice_side)};
  }
  return {};
}

CommandReply Reconstructor::set_slice(const SetSliceCommand& command) {
  const std::string orientation = validate_orientation(command.orientation);
  if (!orientation.empty()) return reply(StatusCode::kInvalidArgument, orientation);
  const Status size = validate_slice_size(command.width, command.height);
  if (!size.ok()) return reply(size.code, size.message);
  const auto existing = slices_.find(command.slice_id);
  if (existing == slices_.end() && static_cast<int>(slices_.size()) >= config_.max_slices) {
    return reply(StatusCode::kResourceExhausted,
                 "at most " + std::to_string(config_.max_slices) + " slices; remove one first");
  }
  SliceState slice;
  slice.spec = command;
  if (existing != slices_.end()) slice.sequence = existing->second.sequence;
  if (store_ready_) {
    try {
      build_slice_targets(slice);  // the old slice stays if this fails
    } catch (const BackendError& e) {
      return reply(StatusCode::kResourceExhausted, e.what());
    }
  }
  client_configured_slices_ = true;
  SliceState& stored = slices_[command.slice_id];
  stored = std::move(slice);
  refinements_.slice_changed(command);
  std::ostringstream message;
  message << "slice " << command.slice_id << " set (" << command.width << " x " << command.height
          << ")";
  if (store_ready_) {
    publish_slice(command.slice_id, stored, Clock::now());
  } else {
    message << "; it is reconstructed when a scan starts";
  }
  return reply(StatusCode::kOk, message.str());
}

CommandReply Reconstructor::remove_slice(const RemoveSliceCommand& command) {
  const auto it = slices_.find(command.slice_id);
  if (it == slices_.end()) {
    CommandReply r =
        reply(StatusCode::kNotFound, "no slice with id " + std::to_string(command.slice_id));
    r.status.reason = "unknown_slice";
    return r;
  }
  slices_.erase(it);
  refinements_.slice_removed(command.slice_id);
  client_configured_slices_ = true;
  return reply(StatusCode::kOk, "slice " + std::to_string(command.slice_id) + " removed");
}

CommandReply Reconstructor::get_slice(const GetSliceCommand& command) {
  const std::string orientation = validate_orientation(command.orientation);
  if (!orientation.empty()) return reply(StatusCode::kInvalidArgument, orientation);
  const Status size = validate_slice_size(command.width, command.height);
  if (!size.ok()) return reply(size.code, size.message);
  if (!store_ready_) {
    return reply(StatusCode::kFailedPrecondition, "no scan has started: no projections to use");
  }
  std::unique_ptr<ReconTarget> target;
  try {
    target = backend_.create_target(slice_grid(command.orientation, command.width, command.height));
  } catch (const BackendError& e) {
    return reply(StatusCode::kResourceExhausted, e.what());
  }
  backend_.backproject_store(all_slots_, *target, scale_, /*accumulate=*/false, 0, 1);
  CommandReply r =
      reply(StatusCode::kOk, "reconstructed from " + std::to_string(integrated_) +
                                 " projections of scan " + std::to_string(scan_.scan_id));
  SliceImage image;
  image.orientation = command.orientation;
  image.width = command.width;
  image.height = command.height;
  image.scan_id = scan_.scan_id;
  image.projections_integrated = integrated_;
  image.newest_detector_timestamp_ns = newest_timestamp_ns_;
  image.newest_arrival_ns = newest_arrival_ns_;
  image.values.resize(target->grid().points());
  backend_.read_target(*target, image.values.data());
  r.slice = std::move(image);
  return r;
}

CommandReply Reconstructor::get_status() {
  StatusReport report;
  const BackendInfo info = backend_.info();
  report.backend = info.name;
  report.backend_device = info.device;
  report.memory = {info.memory_total_bytes, info.memory_used_by_scan_bytes,
                   info.memory_used_by_refiners_bytes};
  if (store_ready_) {
    const DetectorShape& detector = scan_.geometry.detector;
    report.scan = ScanSummary{scan_.volume, scan_.geometry.beam, detector.rows, detector.cols,
                              window_,      scan_.description};
  }
  report.scan_active = scan_running_;
  report.scan_id = scan_.scan_id;
  report.scan_state = scan_state_;
  for (const auto& [id, slice] : slices_)
    report.slices.push_back(slice.spec);
  report.refinements = refinements_.status();
  report.residuals = refinements_.residuals(Clock::now());
  report.parameters = params_;
  if (metrics_source_) report.metrics = metrics_source_();
  CommandReply r = reply(StatusCode::kOk, "status of scan " + std::to_string(scan_.scan_id));
  r.report = std::move(report);
  return r;
}

CommandReply Reconstructor::set_parameters(const SetParametersCommand& command) {
  const std::string problem = parameters_problem(command);
  if (!problem.empty()) return reply(StatusCode::kInvalidArgument, problem);
  std::ostringstream notes;
  if (command.filter) {
    if (store_ready_) backend_.set_filter(*command.filter);
    params_.filter = *command.filter;
    notes << "filter " << to_string(command.filter->window) << " (cutoff " << command.filter->cutoff
          << ") applies to projections filtered from now on; the window turns over within one "
             "rotation. ";
  }
  if (command.publish_rate_hz) params_.publish_rate_hz = *command.publish_rate_hz;
  if (command.preview_interval_s) params_.preview_interval_s = *command.preview_interval_s;
  if (command.window_mode) apply_window_mode(*command.window_mode);
  if (command.rotation_axis_offset_px &&
      *command.rotation_axis_offset_px != params_.rotation_axis_offset_px) {
    apply_rotation_axis_offset(*command.rotation_axis_offset_px);
    notes << "rotation axis offset " << params_.rotation_axis_offset_px
          << " px: slices recomputed. ";
  }
  CommandReply r = reply(StatusCode::kOk, "parameters set. " + notes.str());
  r.parameters = params_;
  return r;
}

CommandReply Reconstructor::set_refinement(const SetRefinementCommand& command) {
  const auto it = slices_.find(command.slice_id);
  CommandReply r;
  r.status = refinements_.configure(command, it == slices_.end() ? nullptr : &it->second.spec);
  if (r.status.ok()) spdlog::info("refinement: {}", r.status.message);
  return r;
}

void Reconstructor::apply_window_mode(WindowMode mode) {
  if (mode == params_.window_mode) return;
  params_.window_mode = mode;
  if (!store_ready_) return;
  for (auto& [id, slice] : slices_)
    slice.shadow_active = false;
  if (mode == WindowMode::kPerRotation) {
    // The slices keep showing the window until the current rotation completes.
    if (scan_running_) start_shadows();
    return;
  }
  // Back to sliding: the live targets show an old rotation; rebuild them from the store.
  unpublished_arrivals_.insert(unpublished_arrivals_.end(), rotation_arrivals_.begin(),
                               rotation_arrivals_.end());
  rotation_arrivals_.clear();
  for (auto& [id, slice] : slices_) {
    if (!slice.live) continue;
    recompute(slice);
    slice.dirty = true;
  }
}

void Reconstructor::apply_rotation_axis_offset(double offset_px) {
  params_.rotation_axis_offset_px = offset_px;
  if (!store_ready_) return;
  std::vector<ProjectionMap> maps;
  maps.reserve(slot_vectors_.size());
  for (const ProjectionVector& vector : slot_vectors_)
    maps.push_back(map_of(vector));
  backend_.set_slot_maps(maps);
  refinements_.set_rotation_axis_offset(offset_px);
  ++store_version_;
  preview_.cancel();
  const bool per_rotation = params_.window_mode == WindowMode::kPerRotation;
  unpublished_arrivals_.insert(unpublished_arrivals_.end(), rotation_arrivals_.begin(),
                               rotation_arrivals_.end());
  rotation_arrivals_.clear();
  for (auto& [id, slice] : slices_) {
    if (!slice.live) continue;
    slice.shadow_active = false;
    recompute(slice);
    if (per_rotation && scan_running_) start_shadow(slice);
    slice.dirty = true;
  }
  publish_due(Clock::now(), /*force=*/true);
}

}  // namespace slicestream
