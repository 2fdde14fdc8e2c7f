// The reconstruct stage's commands: slice set changes, one-shot slices, status, parameters.
#include <spdlog/spdlog.h>

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

CommandReply over_budget(std::string shortfall) {
  CommandReply r = reply(StatusCode::kResourceExhausted, std::move(shortfall));
  r.status.reason = "memory_budget";
  return r;
}

// "0, 1, 2".
std::string join_ids(const std::vector<std::uint32_t>& ids) {
  std::string text;
  for (std::uint32_t id : ids)
    text += (text.empty() ? "" : ", ") + std::to_string(id);
  return text;
}

}  // namespace

void Reconstructor::on_command(CommandItem& item) {
  CommandReply result;
  bool deferred = false;  // a GetSlice answered when its last unit ran
  try {
    result = std::visit(
        [&](const auto& command) -> CommandReply {
          using T = std::decay_t<decltype(command)>;
          if constexpr (std::is_same_v<T, SetSliceCommand>) return set_slice(command);
          if constexpr (std::is_same_v<T, RemoveSliceCommand>) return remove_slice(command);
          if constexpr (std::is_same_v<T, GetSliceCommand>) {
            return get_slice(command, item.on_reply, &deferred);
          }
          if constexpr (std::is_same_v<T, GetStatusCommand>) return get_status();
          if constexpr (std::is_same_v<T, SetParametersCommand>) return set_parameters(command);
          if constexpr (std::is_same_v<T, SetRefinementCommand>) return set_refinement(command);
          if constexpr (std::is_same_v<T, ResetSlicesCommand>) return reset_slices();
          if constexpr (std::is_same_v<T, GetVolumeCommand>) return get_volume(command);
        },
        item.command);
  } catch (const BackendError& e) {
    events_.error("backend_error", std::string("command failed: ") + e.what(), scan_.scan_id);
    result = reply(StatusCode::kInternal, e.what());
  } catch (const std::exception& e) {
    events_.error("internal_error", std::string("command failed: ") + e.what(), scan_.scan_id);
    result = reply(StatusCode::kInternal, e.what());
  }
  if (deferred) return;
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
  const Slice* replaced = slices_.find(command.slice_id);
  if (replaced == nullptr && static_cast<int>(slices_.slices().size()) >= config_.max_slices) {
    return reply(StatusCode::kResourceExhausted,
                 "at most " + std::to_string(config_.max_slices) + " slices; remove one first");
  }
  Slice slice = client_slice(command, store_ready_ ? &scan_.volume : nullptr);
  const std::string shortfall = slices_.reserve(slice, replaced, /*with_target=*/!store_ready_);
  if (!shortfall.empty()) return over_budget(shortfall + "; remove or shrink a slice first");
  bool in_units = false;  // computed beside the frames, shown once complete
  if (store_ready_) {
    try {
      in_units = !compute_slice(slice);  // the old slice stays if this fails
    } catch (const BackendError& e) {
      return reply(StatusCode::kResourceExhausted, e.what());
    }
  }
  Slice& stored = slices_.set(command.slice_id, std::move(slice));
  // An update of the old place held back for the publish stage gives way to the new image.
  if (schedule_.restart(command.slice_id)) ++metrics_.counters().publications_coalesced;
  refinements_.slice_changed(stored.spec);
  std::ostringstream message;
  message << "slice " << command.slice_id << " set (" << command.width << " x " << command.height
          << ", " << describe(stored.spec.orientation)
          << (command.box_coordinates ? "; box coordinates: it follows every scan's box" : "")
          << ")";
  if (stored.outside_box) {
    message << "; it misses the box of scan " << scan_.scan_id << " (" << describe_box(scan_.volume)
            << ") and shows nothing";
  }
  if (in_units) {
    message << "; it is computed beside the frames and published when complete";
  } else if (store_ready_) {
    publish_slice(command.slice_id, stored, Clock::now(), /*moved=*/true);
  } else {
    message << "; it is reconstructed when a scan starts";
  }
  return reply(StatusCode::kOk, message.str());
}

CommandReply Reconstructor::remove_slice(const RemoveSliceCommand& command) {
  const bool existed = slices_.find(command.slice_id) != nullptr;
  if (!slices_.remove(command.slice_id)) {
    CommandReply r =
        reply(StatusCode::kNotFound, "no slice with id " + std::to_string(command.slice_id));
    r.status.reason = "unknown_slice";
    return r;
  }
  schedule_.forget(command.slice_id);
  refinements_.slice_removed(command.slice_id);
  const std::string id = std::to_string(command.slice_id);
  std::string message = existed ? "slice " + id + " removed" : "default slice " + id + " removed";
  if (command.slice_id < kDefaultSliceCount) {
    message += "; no default slice " + id + " is placed until the slices are reset";
  }
  return reply(StatusCode::kOk, message);
}

CommandReply Reconstructor::reset_slices() {
  std::ostringstream message;
  message << "slices reset";
  const std::vector<std::uint32_t> removed = slices_.reset();
  for (std::uint32_t id : removed) {
    schedule_.forget(id);
    refinements_.slice_removed(id);
  }
  if (!removed.empty()) message << "; removed " << join_ids(removed);
  if (!store_ready_) {
    message << "; the default slices are placed when a scan starts";
    return reply(StatusCode::kOk, message.str());
  }
  place_slices_on_box();
  std::vector<std::uint32_t> placed;
  bool in_units = false;
  std::vector<std::uint32_t> ids;
  for (const auto& entry : slices_.slices())
    ids.push_back(entry.first);
  for (std::uint32_t id : ids) {
    Slice& slice = slices_.slices().at(id);
    try {
      // Like SetSlice: at once when that is quick and no frame waits, else in units beside the
      // frames, published once complete.
      if (compute_slice(slice)) {
        publish_slice(id, slice, Clock::now(), /*moved=*/true);
      } else {
        in_units = true;
      }
    } catch (const std::exception& e) {
      remove_failed_slice(id, e);
      continue;
    }
    refinements_.slice_changed(slice.spec);
    placed.push_back(id);
  }
  message << "; default slices " << join_ids(placed) << " placed on the box of scan "
          << scan_.scan_id;
  if (in_units) message << "; computed beside the frames and published when complete";
  return reply(StatusCode::kOk, message.str());
}

CommandReply Reconstructor::get_slice(const GetSliceCommand& command, ReplyCallback& on_reply,
                                      bool* deferred) {
  const std::string orientation = validate_orientation(command.orientation);
  if (!orientation.empty()) return reply(StatusCode::kInvalidArgument, orientation);
  const Status size = validate_slice_size(command.width, command.height);
  if (!size.ok()) return reply(size.code, size.message);
  if (!store_ready_) {
    return reply(StatusCode::kFailedPrecondition, "no scan has started: no projections to use");
  }
  // The image is charged before anything is allocated; it travels with the reply until the
  // server has sent it.
  const std::size_t image_bytes = static_cast<std::size_t>(command.width) *
                                  static_cast<std::size_t>(command.height) * sizeof(float);
  std::shared_ptr<MemoryCharge> memory = backend_.host_memory()->try_charge(image_bytes);
  if (!memory) return over_budget(backend_.host_memory()->shortfall(image_bytes, "this GetSlice"));
  SliceImage image;
  image.orientation = command.orientation;
  image.width = command.width;
  image.height = command.height;
  image.scan_id = scan_.scan_id;
  image.filter = params_.filter;
  image.values.resize(image_bytes / sizeof(float));
  image.memory = std::move(memory);
  on_demand_.add(std::move(image), std::move(on_reply));
  *deferred = true;
  return {};
}

std::vector<float> Reconstructor::reconstruct_window(ReconTarget& target) {
  backend_.backproject_store(slices_.all_slots(), target, slices_.scale(), /*accumulate=*/false, 0,
                             target.grid().depth);
  std::vector<float> values(target.grid().points());
  backend_.read_target(target, values.data());
  return values;
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
    report.scan = ScanSummary{scan_.volume,  scan_.geometry.beam, detector.rows,
                              detector.cols, slices_.window(),    scan_.description};
  }
  report.scan_active = scan_running_;
  report.scan_id = scan_.scan_id;
  report.scan_state = scan_state_;
  report.scan_end_reason = scan_end_reason_;
  if (store_ready_) report.scan_description = scan_;
  report.slices = slices_.specs();
  report.slice_info = slices_.info();
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
  if (!problem.empty()) {
    CommandReply r = reply(StatusCode::kInvalidArgument, problem);
    r.status.reason = "bad_value";
    return r;
  }
  // Window and cutoff may come alone: the other keeps its value in force.
  const Parameters wanted = apply(command, params_);
  std::ostringstream notes;
  if (command.filter_window || command.filter_cutoff) {
    if (store_ready_) backend_.set_filter(wanted.filter);
    params_.filter = wanted.filter;
    notes << "filter " << to_string(wanted.filter.window) << " (cutoff " << wanted.filter.cutoff
          << ") applies to projections filtered from now on; the window turns over within one "
             "rotation. ";
  }
  params_.publish_rate_hz = wanted.publish_rate_hz;
  params_.preview_interval_s = wanted.preview_interval_s;
  if (command.window_mode) apply_window_mode(*command.window_mode);
  if (wanted.rotation_axis_offset_px != params_.rotation_axis_offset_px) {
    apply_rotation_axis_offset(wanted.rotation_axis_offset_px);
    notes << "rotation axis offset " << params_.rotation_axis_offset_px
          << " px: slices recomputed. ";
  }
  CommandReply r =
      reply(StatusCode::kOk, "parameters set: " + describe(params_) + ". " + notes.str());
  r.parameters = params_;
  return r;
}

CommandReply Reconstructor::set_refinement(const SetRefinementCommand& command) {
  const Slice* slice = slices_.find(command.slice_id);
  CommandReply r;
  r.status = refinements_.configure(command, slice == nullptr ? nullptr : &slice->spec);
  if (r.status.ok()) spdlog::info("refinement: {}", r.status.message);
  return r;
}

void Reconstructor::apply_window_mode(WindowMode mode) {
  if (mode == params_.window_mode) return;
  params_.window_mode = mode;
  if (!store_ready_) return;
  for (auto& [id, slice] : slices_.slices())
    slice.shadow_active = false;
  if (mode == WindowMode::kPerRotation) {
    // The slices keep showing the window until the current rotation completes.
    if (scan_running_) start_shadows();
    return;
  }
  // Back to sliding: the live targets show an old rotation; rebuild them from the store.
  arrivals_.rotation_shown();
  for (auto& [id, slice] : slices_.slices()) {
    if (!slice.live) continue;
    recompute(slice);
    image_changed(id);
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
  preview_timing_.store_changed();
  preview_.cancel();
  arrivals_.rotation_shown();
  for (auto& [id, slice] : slices_.slices()) {
    if (!slice.live && !slice.building) continue;
    slice.shadow_active = false;
    // A build in progress starts again with the new maps.
    if (compute_slice(slice)) image_changed(id);
  }
  publish_due(Clock::now(), /*force=*/true);
}

}  // namespace slicestream
