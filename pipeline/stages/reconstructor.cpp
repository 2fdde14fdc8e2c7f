#include "pipeline/stages/reconstructor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <utility>

#include "kernels/geometry_warnings.hpp"
#include "pipeline/messages/overloaded.hpp"

namespace slicestream {

Reconstructor::Reconstructor(const PipelineConfig& config, Backend& backend,
                             MetricsRegistry& metrics, EventReporter& events,
                             DetectorRowSelection& rows, Publish publish,
                             PublicationBacklog& backlog, MetricsSource metrics_source,
                             FramesWaiting frames_waiting)
    : config_(config),
      backend_(backend),
      metrics_(metrics),
      events_(events),
      publish_(std::move(publish)),
      backlog_(backlog),
      metrics_source_(std::move(metrics_source)),
      frames_waiting_(std::move(frames_waiting)),
      params_(config.parameters),
      slices_(backend),
      preview_(backend, config.preview_size),
      refinements_(config.refinement, backend, metrics, events, rows) {}

Reconstructor::~Reconstructor() {
  try {
    release_scan();
  } catch (const std::exception& e) {
    spdlog::error("releasing the scan failed: {}", e.what());
  }
}

void Reconstructor::handle(StageItem&& item) {
  std::visit(Overloaded{
                 [&](ScanStartItem& start) { on_scan_start(start); },
                 [&](CalibrationItem& calibration) { on_calibration(calibration); },
                 [&](ProjectionItem& projection) {
                   std::vector<ProjectionItem> one;
                   one.push_back(std::move(projection));
                   handle_projections(one);
                 },
                 [&](ScanEndItem& end) { on_scan_end(end); },
                 [&](FlushMarker& marker) {
                   markers_.push_back(std::move(marker));
                   release_markers_if_clean();
                 },
                 [&](CommandItem& command) { on_command(command); },
             },
             item);
}

void Reconstructor::backend_error(const std::string& what, const std::exception& e,
                                  std::uint64_t frames) {
  if (frames > 0) metrics_.add_discard(DiscardReason::kBackendError, frames);
  events_.error("backend_error", what + ": " + e.what(), scan_.scan_id);
}

// ------------------------------------------------------------------------------ scan lifecycle

void Reconstructor::release_scan() {
  on_demand_.cancel_all(StatusCode::kUnavailable,
                        "a new scan replaced the projections before this GetSlice was complete; "
                        "ask again");
  slices_.release_targets();
  schedule_.clear_dirty();
  preview_.end_scan();
  refinements_.release_scan();
  if (store_ready_) backend_.end_scan();
  store_ready_ = false;
  scan_running_ = false;
}

void Reconstructor::on_scan_start(ScanStartItem& item) {
  const ScanDescription& scan = item.scan;
  if (scan_running_) on_scan_end(ScanEndItem{scan_.scan_id, "superseded"});
  release_scan();
  ScanSetup setup;
  setup.geometry = scan.geometry;
  setup.pixel_type = scan.pixel_type;
  setup.preprocess.already_linear = scan.already_linear;
  setup.filter = params_.filter;
  // Projections between preprocess and the store: two queues plus one in each stage.
  setup.projections_in_flight = 2 * static_cast<std::size_t>(config_.queue_depth) + 3;
  setup.max_projection_batch = config_.max_projection_batch;
  try {
    backend_.begin_scan(setup);
  } catch (const std::exception& e) {
    events_.error("backend_error",
                  "scan " + std::to_string(scan.scan_id) + " cannot start: " + e.what(),
                  scan.scan_id);
    item.started.set_value(Status{StatusCode::kResourceExhausted, e.what()});
    return;
  }
  store_ready_ = true;
  scan_running_ = true;
  scan_ = scan;
  slices_.begin_scan(scan.projections_per_rotation(),
                     angular_weight(scan.projections_per_rotation()));
  slot_vectors_ = scan.geometry.vectors;
  content_ = WindowContent{};
  any_projection_ = false;
  rotation_ = 0;
  clamped_values_seen_ = 0;  // a new store counts from zero
  arrivals_.clear();
  preview_timing_.reset();

  place_slices_on_box();
  const std::string suspicious = geometry_warning(scan_.geometry, scan_.volume);
  if (!suspicious.empty()) {
    events_.warning("suspicious_geometry",
                    "scan " + std::to_string(scan_.scan_id) + ": " + suspicious, scan_.scan_id);
  }
  build_all_slice_targets();
  refinements_.begin_scan(scan.scan_id, scan.geometry, params_.rotation_axis_offset_px,
                          slices_.specs());
  try {
    preview_.begin_scan(scan.volume, slices_.window());
  } catch (const std::exception& e) {
    events_.error("backend_error", std::string("preview disabled for this scan: ") + e.what(),
                  scan.scan_id);
  }
  scan_state_ =
      scan.dark_count + scan.flat_count > 0 ? ScanState::kCalibrating : ScanState::kReconstructing;
  scan_end_reason_.clear();
  ++metrics_.counters().scans_started;
  std::ostringstream message;
  message << "scan started: " << to_string(scan.geometry.beam) << " beam, "
          << scan.geometry.detector.rows << " x " << scan.geometry.detector.cols << " "
          << to_string(scan.pixel_type) << ", " << slices_.window() << " projections per rotation, "
          << scan.dark_count << " darks, " << scan.flat_count << " flats, "
          << slices_.slices().size() << " slices, mode " << to_string(params_.window_mode);
  if (!scan.description.empty()) message << " (" << scan.description << ")";
  events_.scan_event(EventKind::kScanStarted, scan.scan_id, message.str(),
                     StartedScan{scan.volume, scan.geometry.detector});
  item.started.set_value(Status{});
}

int Reconstructor::default_slice_side() const {
  const int size =
      config_.default_slice_size > 0 ? config_.default_slice_size : scan_.geometry.detector.cols;
  return std::clamp(size, 1, config_.max_slice_side);
}

void Reconstructor::place_slices_on_box() {
  for (std::uint32_t id : slices_.place_on_box(scan_.volume, default_slice_side())) {
    schedule_.forget(id);  // a new default slice starts a new sequence
  }
  for (const auto& [id, slice] : slices_.slices()) {
    if (!slice.outside_box) continue;
    events_.warning("slice_outside_box",
                    "slice " + std::to_string(id) + " (set in world mm) misses the box of scan " +
                        std::to_string(scan_.scan_id) + " (" + describe_box(scan_.volume) +
                        "): it shows nothing; move it, set it in box coordinates, or reset the "
                        "slices to the defaults",
                    scan_.scan_id);
  }
}

void Reconstructor::build_all_slice_targets() {
  SliceSet::Slices& all = slices_.slices();
  for (auto it = all.begin(); it != all.end();) {
    try {
      build_slice_targets(it->second);
      ++it;
    } catch (const std::exception& e) {
      events_.error("backend_error", "slice " + std::to_string(it->first) + " removed: " + e.what(),
                    scan_.scan_id);
      schedule_.forget(it->first);
      it = all.erase(it);
    }
  }
}

void Reconstructor::on_calibration(CalibrationItem& item) {
  try {
    backend_.set_calibration(item.dark, item.flat);
    refinements_.set_calibration(item.dark, item.flat);
    scan_state_ = ScanState::kReconstructing;
    item.applied.set_value(Status{});
  } catch (const std::exception& e) {
    backend_error("scan " + std::to_string(item.scan_id) + ": calibration not applied", e, 0);
    item.applied.set_value(Status{StatusCode::kInternal, e.what()});
  }
}

void Reconstructor::on_scan_end(const ScanEndItem& item) {
  // Every frame of the scan queued before its end has been handled by now.
  metrics_.scans().reconstructed(item.scan_id);
  if (!scan_running_ || item.scan_id != scan_.scan_id) return;
  for (auto& [id, slice] : slices_.slices()) {
    // Per-rotation: the last, partial rotation is published (completed from the store).
    if (!sliding() && slice.shadow_active && slice.covered_count > 0) complete_shadow(id, slice);
    slice.shadow_active = false;
  }
  publish_due(Clock::now(), /*force=*/true);
  scan_running_ = false;
  refinements_.end_scan();
  scan_state_ = ScanState::kEnded;
  scan_end_reason_ = item.why;
  preview_timing_.force();  // one last preview of the complete scan
  ++metrics_.counters().scans_ended;
  events_.scan_event(EventKind::kScanEnded, item.scan_id,
                     "scan ended (" + item.why +
                         "): " + std::to_string(content_.projections_integrated) +
                         " projections integrated");
}

// ------------------------------------------------------------------------------ projections

ProjectionMap Reconstructor::map_of(const ProjectionVector& vector) const {
  ScanGeometry single{scan_.geometry.beam, scan_.geometry.detector, {vector}};
  if (params_.rotation_axis_offset_px != 0) {
    single = with_rotation_axis_offset(single, params_.rotation_axis_offset_px);
  }
  return make_projection_map(single.beam, single.vectors[0], single.detector);
}

void Reconstructor::handle_projections(std::vector<ProjectionItem>& items) {
  for (ProjectionItem& item : items) {
    if (!scan_running_ || item.meta.scan_id != scan_.scan_id || !item.buffer) {
      metrics_.add_discard(DiscardReason::kScanEnded);
      continue;
    }
    scan_state_ = ScanState::kReconstructing;
    // A new rotation completes shadows from the store and starts new ones: the store and the
    // targets must hold every earlier frame first.
    if (!any_projection_ || item.placement.rotation > rotation_) flush_batch();
    advance_rotation(item.placement.rotation);
    queue_projection(item);
    // A shadow that holds every slot is complete now (per-rotation: publish without waiting for
    // the next rotation's first frame).
    if (slices_.any_shadow_full()) {
      flush_batch();
      complete_full_shadows();
      // Per-rotation: every completed rotation is published, also when the batch goes on into
      // the next one.
      if (!sliding()) publish_due(Clock::now(), false);
    }
  }
  flush_batch();
}

void Reconstructor::queue_projection(ProjectionItem& item) {
  ProjectionUpdate update;
  update.slot = item.placement.slot;
  update.map = map_of(item.placement.vector);
  update.projection = std::move(item.buffer);
  slices_.add_targets(update.slot, sliding(), update);
  batch_updates_.push_back(std::move(update));
  batch_frames_.push_back({item.meta, item.placement, std::move(item.captured)});
}

void Reconstructor::flush_batch() {
  std::vector<ProjectionUpdate> updates = std::move(batch_updates_);
  std::vector<PendingFrame> frames = std::move(batch_frames_);
  batch_updates_.clear();
  batch_frames_.clear();
  std::size_t next = 0;  // frames before `next` are integrated or lost
  while (next < updates.size()) {
    std::vector<ProjectionUpdate> attempt;
    attempt.reserve(updates.size() - next);
    for (std::size_t i = next; i < updates.size(); ++i)
      attempt.push_back(std::move(updates[i]));
    // Integrates what took effect and counts what was lost; returns where untried updates begin.
    std::uint64_t lost = 0;
    std::uint32_t first_lost = 0;
    auto account = [&]() {
      std::size_t k = 0;
      for (; k < attempt.size(); ++k) {
        if (attempt[k].applied) {
          integrate(frames[next + k]);
        } else if (!attempt[k].projection) {
          if (lost++ == 0) first_lost = frames[next + k].meta.index;
          refinements_.lose_slot(frames[next + k].placement.slot);
        } else {
          break;
        }
      }
      return k;
    };
    std::size_t untried = attempt.size();
    try {
      backend_.replace_projections(attempt, slices_.scale());
      untried = account();
      if (untried < attempt.size()) {
        throw BackendError("the backend left " + std::to_string(attempt.size() - untried) +
                           " projections of a batch unapplied without an error");
      }
    } catch (const std::exception& e) {
      if (untried == attempt.size()) untried = account();
      if (lost == 0 && untried < attempt.size()) {
        // No progress: give up on the first untried projection rather than retry it forever.
        attempt[untried].projection.reset();
        first_lost = frames[next + untried].meta.index;
        refinements_.lose_slot(frames[next + untried].placement.slot);
        lost = 1;
        ++untried;
      }
      std::string what = "a batched store update failed";
      if (lost == 1) what = "projection " + std::to_string(first_lost) + " not integrated";
      if (lost > 1) {
        what = std::to_string(lost) + " projections from " + std::to_string(first_lost) +
               " on not integrated";
      }
      backend_error(what, e, lost);
      rebuild_after_failure();
    }
    // Untried updates go again (their targets are current: live ones were rebuilt from the store).
    for (std::size_t k = untried; k < attempt.size(); ++k)
      updates[next + k] = std::move(attempt[k]);
    next += untried;
  }
  report_clamped_values();
}

void Reconstructor::report_clamped_values() {
  const std::uint64_t total = backend_.store_values_clamped();
  if (total <= clamped_values_seen_) return;
  const std::uint64_t added = total - clamped_values_seen_;
  clamped_values_seen_ = total;
  metrics_.counters().store_values_clamped += added;
  events_.warning(kStoreValuesClampedWarning,
                  "scan " + std::to_string(scan_.scan_id) + ": " + std::to_string(added) +
                      " filtered projection values beyond the range of the store's fp16 texels "
                      "(+-65504) were clamped to it; the slices are off where they were. Start "
                      "the server with --texels fp32 for data of this range",
                  scan_.scan_id);
}

void Reconstructor::rebuild_after_failure() {
  // The targets may be half-updated: rebuild them from the store.
  for (auto& [id, slice] : slices_.slices()) {
    slice.shadow_active = false;
    try {
      if (slice.building) slices_.start_build(slice);
      if (slice.live) recompute(slice);
    } catch (const std::exception& again) {
      backend_error("slice " + std::to_string(id) + " not rebuilt", again, 0);
    }
  }
}

void Reconstructor::integrate(const PendingFrame& frame) {
  slot_vectors_[static_cast<std::size_t>(frame.placement.slot)] = frame.placement.vector;
  refinements_.on_projection(frame.placement.slot, frame.placement.vector, frame.captured);
  ++content_.projections_integrated;
  ++metrics_.counters().projections_integrated;
  metrics_.scans().integrated(frame.meta.scan_id);
  content_.newest_timestamp_ns = frame.meta.detector_timestamp_ns;
  content_.newest_arrival_ns = frame.meta.arrival_ns;
  preview_timing_.store_changed();
  if (sliding()) {
    for (auto& [id, slice] : slices_.slices()) {
      if (!slice.live) continue;
      slice.shows = content_;
      image_changed(id);
    }
  }
  if (!slices_.slices().empty()) arrivals_.integrated(frame.meta.arrival_ns, sliding());
}

void Reconstructor::complete_full_shadows() {
  for (auto& [id, slice] : slices_.slices()) {
    if (!slices_.shadow_full(slice)) continue;
    complete_shadow(id, slice);
    if (!sliding()) start_shadow(id, slice);
  }
}

void Reconstructor::advance_rotation(std::uint64_t rotation) {
  if (!any_projection_) {
    any_projection_ = true;
    rotation_ = rotation;
    for (auto& [id, slice] : slices_.slices())
      slice.rebuilt_rotation = rotation;
    return;
  }
  if (rotation <= rotation_) return;  // a late frame of an earlier rotation joins the current one
  // Shadows the ended rotation did not fill completely (missed frames, slice added mid-rotation).
  for (auto& [id, slice] : slices_.slices()) {
    if (slice.shadow_active && slice.covered_count > 0) complete_shadow(id, slice);
  }
  rotation_ = rotation;
  start_shadows();
}

void Reconstructor::complete_shadow(std::uint32_t id, Slice& slice) {
  try {
    slices_.complete_shadow(slice, rotation_);
  } catch (const std::exception& e) {
    backend_error("slice " + std::to_string(id) + ": rotation not completed", e, 0);
    return;
  }
  if (sliding()) return;
  slice.shows = content_;
  image_changed(id);
  arrivals_.rotation_shown();
}

void Reconstructor::start_shadows() {
  const auto refresh = static_cast<std::uint64_t>(config_.refresh_rotations);
  for (auto& [id, slice] : slices_.slices()) {
    if (!slice.live || slice.shadow_active) continue;
    const bool refresh_due = refresh > 0 && rotation_ - slice.rebuilt_rotation >= refresh;
    if (sliding() && !refresh_due) continue;
    start_shadow(id, slice);
  }
}

void Reconstructor::start_shadow(std::uint32_t id, Slice& slice) {
  try {
    slices_.start_shadow(slice);
  } catch (const std::exception& e) {
    backend_error("slice " + std::to_string(id) + ": no shadow target", e, 0);
  }
}

void Reconstructor::build_slice_targets(Slice& slice) {
  slices_.build_targets(slice, content_, rotation_);
  if (!sliding() && scan_running_) slices_.start_shadow(slice);
}

}  // namespace slicestream
