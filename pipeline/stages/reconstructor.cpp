#include "pipeline/stages/reconstructor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <utility>

#include "pipeline/messages/overloaded.hpp"

namespace slicestream {
namespace {

// Latency bookkeeping bound (frames integrated but not yet in a publication).
constexpr std::size_t kMaxPendingArrivals = std::size_t{1} << 16;

}  // namespace

Reconstructor::Reconstructor(const PipelineConfig& config, Backend& backend,
                             MetricsRegistry& metrics, EventReporter& events,
                             DetectorRowSelection& rows, Publish publish,
                             MetricsSource metrics_source)
    : config_(config),
      backend_(backend),
      metrics_(metrics),
      events_(events),
      publish_(std::move(publish)),
      metrics_source_(std::move(metrics_source)),
      params_(config.parameters),
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
  if (frames > 0) metrics_.add_discard("backend_error", frames);
  events_.error("backend_error", what + ": " + e.what(), scan_.scan_id);
}

// ------------------------------------------------------------------------------ scan lifecycle

void Reconstructor::release_scan() {
  for (auto& [id, slice] : slices_) {
    slice.live.reset();
    slice.shadow.reset();
    slice.shadow_active = false;
    slice.dirty = false;
  }
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
  window_ = scan.projections_per_rotation();
  scale_ = angular_weight(window_);
  all_slots_.resize(static_cast<std::size_t>(window_));
  std::iota(all_slots_.begin(), all_slots_.end(), 0);
  slot_vectors_ = scan.geometry.vectors;
  integrated_ = 0;
  newest_timestamp_ns_ = 0;
  newest_arrival_ns_ = 0;
  any_projection_ = false;
  rotation_ = 0;
  unpublished_arrivals_.clear();
  rotation_arrivals_.clear();
  store_version_ = 0;
  preview_version_ = 0;
  preview_forced_ = false;
  preview_started_ = Clock::time_point{};

  if (!client_configured_slices_) place_default_slices();
  for (auto it = slices_.begin(); it != slices_.end();) {
    try {
      build_slice_targets(it->second);
      ++it;
    } catch (const std::exception& e) {
      events_.error("backend_error", "slice " + std::to_string(it->first) + " removed: " + e.what(),
                    scan.scan_id);
      it = slices_.erase(it);
    }
  }
  std::vector<SetSliceCommand> specs;
  for (const auto& [id, slice] : slices_)
    specs.push_back(slice.spec);
  refinements_.begin_scan(scan.scan_id, scan.geometry, params_.rotation_axis_offset_px, specs);
  try {
    preview_.begin_scan(scan.volume, window_);
  } catch (const std::exception& e) {
    events_.error("backend_error", std::string("preview disabled for this scan: ") + e.what(),
                  scan.scan_id);
  }
  scan_state_ = scan.dark_count + scan.flat_count > 0 ? "calibrating" : "reconstructing";
  ++metrics_.counters().scans_started;
  std::ostringstream message;
  message << "scan started: " << to_string(scan.geometry.beam) << " beam, "
          << scan.geometry.detector.rows << " x " << scan.geometry.detector.cols << " "
          << to_string(scan.pixel_type) << ", " << window_ << " projections per rotation, "
          << scan.dark_count << " darks, " << scan.flat_count << " flats, " << slices_.size()
          << " slices, mode " << to_string(params_.window_mode);
  if (!scan.description.empty()) message << " (" << scan.description << ")";
  events_.scan_event(EventKind::kScanStarted, scan.scan_id, message.str(),
                     StartedScan{scan.volume, scan.geometry.detector});
  item.started.set_value(Status{});
}

void Reconstructor::place_default_slices() {
  for (auto it = slices_.begin(); it != slices_.end();) {
    it = it->second.is_default ? slices_.erase(it) : std::next(it);
  }
  const std::array<SliceOrientation, 3> orientations = default_slices(scan_.volume);
  int size =
      config_.default_slice_size > 0 ? config_.default_slice_size : scan_.geometry.detector.cols;
  size = std::clamp(size, 1, config_.max_slice_side);
  for (std::uint32_t id = 0; id < 3; ++id) {
    if (slices_.count(id) > 0) continue;
    SliceState slice;
    slice.spec = SetSliceCommand{id, orientations[id], size, size};
    slice.is_default = true;
    slices_.emplace(id, std::move(slice));
  }
}

void Reconstructor::on_calibration(CalibrationItem& item) {
  try {
    backend_.set_calibration(item.dark, item.flat);
    scan_state_ = "reconstructing";
    item.applied.set_value(Status{});
  } catch (const std::exception& e) {
    backend_error("scan " + std::to_string(item.scan_id) + ": calibration not applied", e, 0);
    item.applied.set_value(Status{StatusCode::kInternal, e.what()});
  }
}

void Reconstructor::on_scan_end(const ScanEndItem& item) {
  if (!scan_running_ || item.scan_id != scan_.scan_id) return;
  const bool per_rotation = params_.window_mode == WindowMode::kPerRotation;
  for (auto& [id, slice] : slices_) {
    // Per-rotation: the last, partial rotation is published (completed from the store).
    if (per_rotation && slice.shadow_active && slice.covered_count > 0) complete_shadow(id, slice);
    slice.shadow_active = false;
  }
  publish_due(Clock::now(), /*force=*/true);
  scan_running_ = false;
  scan_state_ = "ended";
  preview_forced_ = true;  // one last preview of the complete scan
  ++metrics_.counters().scans_ended;
  events_.scan_event(
      EventKind::kScanEnded, item.scan_id,
      "scan ended (" + item.why + "): " + std::to_string(integrated_) + " projections integrated");
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
      metrics_.add_discard("scan_ended");
      continue;
    }
    scan_state_ = "reconstructing";
    // A new rotation completes shadows from the store and starts new ones: the store and the
    // targets must hold every earlier frame first.
    if (!any_projection_ || item.placement.rotation > rotation_) flush_batch();
    advance_rotation(item.placement.rotation);
    queue_projection(item);
    // A shadow that holds every slot is complete now (per-rotation: publish without waiting for
    // the next rotation's first frame).
    const bool shadow_full = std::any_of(slices_.begin(), slices_.end(), [&](const auto& entry) {
      return entry.second.shadow_active &&
             entry.second.covered_count >= static_cast<std::size_t>(window_);
    });
    if (shadow_full) {
      flush_batch();
      complete_full_shadows();
      // Per-rotation: every completed rotation is published, also when the batch goes on into
      // the next one.
      if (params_.window_mode == WindowMode::kPerRotation) publish_due(Clock::now(), false);
    }
  }
  flush_batch();
}

void Reconstructor::queue_projection(ProjectionItem& item) {
  const int slot = item.placement.slot;
  const bool sliding = params_.window_mode == WindowMode::kSlidingWindow;
  ProjectionUpdate update;
  update.slot = slot;
  update.map = map_of(item.placement.vector);
  update.projection = std::move(item.buffer);
  for (auto& [id, slice] : slices_) {
    if (!slice.live) continue;
    if (sliding) update.live.push_back(slice.live.get());
    if (!slice.shadow_active) continue;
    std::vector<bool>::reference covered = slice.covered[static_cast<std::size_t>(slot)];
    if (covered) {
      update.live.push_back(slice.shadow.get());  // the shadow already holds this slot
    } else {
      update.accumulate.push_back(slice.shadow.get());
      covered = true;
      ++slice.covered_count;
    }
  }
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
      backend_.replace_projections(attempt, scale_);
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
}

void Reconstructor::rebuild_after_failure() {
  // The targets may be half-updated: rebuild them from the store.
  for (auto& [id, slice] : slices_) {
    slice.shadow_active = false;
    try {
      if (slice.live) recompute(slice);
    } catch (const std::exception& again) {
      backend_error("slice " + std::to_string(id) + " not rebuilt", again, 0);
    }
  }
}

void Reconstructor::integrate(const PendingFrame& frame) {
  const bool sliding = params_.window_mode == WindowMode::kSlidingWindow;
  slot_vectors_[static_cast<std::size_t>(frame.placement.slot)] = frame.placement.vector;
  refinements_.on_projection(frame.placement.slot, frame.placement.vector, frame.captured);
  ++integrated_;
  ++metrics_.counters().projections_integrated;
  newest_timestamp_ns_ = frame.meta.detector_timestamp_ns;
  newest_arrival_ns_ = frame.meta.arrival_ns;
  ++store_version_;
  if (sliding) {
    for (auto& [id, slice] : slices_) {
      if (!slice.live) continue;
      mark_live_current(slice);
      slice.dirty = true;
    }
  }
  std::vector<std::uint64_t>& arrivals = sliding ? unpublished_arrivals_ : rotation_arrivals_;
  if (!slices_.empty() && arrivals.size() < kMaxPendingArrivals) {
    arrivals.push_back(frame.meta.arrival_ns);
  }
}

void Reconstructor::complete_full_shadows() {
  const bool sliding = params_.window_mode == WindowMode::kSlidingWindow;
  for (auto& [id, slice] : slices_) {
    if (!slice.shadow_active || slice.covered_count < static_cast<std::size_t>(window_)) continue;
    complete_shadow(id, slice);
    if (sliding) continue;
    try {
      start_shadow(slice);
    } catch (const std::exception& e) {
      backend_error("slice " + std::to_string(id) + ": no shadow target", e, 0);
    }
  }
}

void Reconstructor::mark_live_current(SliceState& slice) {
  slice.projections_integrated = integrated_;
  slice.newest_timestamp_ns = newest_timestamp_ns_;
  slice.newest_arrival_ns = newest_arrival_ns_;
}

void Reconstructor::advance_rotation(std::uint64_t rotation) {
  if (!any_projection_) {
    any_projection_ = true;
    rotation_ = rotation;
    for (auto& [id, slice] : slices_)
      slice.rebuilt_rotation = rotation;
    return;
  }
  if (rotation <= rotation_) return;  // a late frame of an earlier rotation joins the current one
  // Shadows the ended rotation did not fill completely (missed frames, slice added mid-rotation).
  for (auto& [id, slice] : slices_) {
    if (slice.shadow_active && slice.covered_count > 0) complete_shadow(id, slice);
  }
  rotation_ = rotation;
  start_shadows();
}

void Reconstructor::complete_shadow(std::uint32_t id, SliceState& slice) {
  slice.shadow_active = false;
  // Slots this rotation did not deliver come from the store, so the shadow equals a full
  // recompute of the window.
  std::vector<int> missing;
  for (int s = 0; s < window_; ++s) {
    if (!slice.covered[static_cast<std::size_t>(s)]) missing.push_back(s);
  }
  try {
    if (!missing.empty()) {
      backend_.backproject_store(missing, *slice.shadow, scale_, /*accumulate=*/true, 0,
                                 slice.shadow->grid().depth);
    }
  } catch (const std::exception& e) {
    backend_error("slice " + std::to_string(id) + ": rotation not completed", e, 0);
    return;
  }
  std::swap(slice.live, slice.shadow);
  slice.rebuilt_rotation = rotation_;
  if (params_.window_mode == WindowMode::kPerRotation) {
    mark_live_current(slice);
    slice.dirty = true;
    unpublished_arrivals_.insert(unpublished_arrivals_.end(), rotation_arrivals_.begin(),
                                 rotation_arrivals_.end());
    rotation_arrivals_.clear();
  }
}

void Reconstructor::start_shadows() {
  const bool per_rotation = params_.window_mode == WindowMode::kPerRotation;
  const auto refresh = static_cast<std::uint64_t>(std::max(0, config_.refresh_rotations));
  for (auto& [id, slice] : slices_) {
    if (!slice.live || slice.shadow_active) continue;
    const bool refresh_due = refresh > 0 && rotation_ - slice.rebuilt_rotation >= refresh;
    if (!per_rotation && !refresh_due) continue;
    try {
      start_shadow(slice);
    } catch (const std::exception& e) {
      backend_error("slice " + std::to_string(id) + ": no shadow target", e, 0);
    }
  }
}

void Reconstructor::start_shadow(SliceState& slice) {
  if (!slice.shadow) slice.shadow = backend_.create_target(slice.live->grid());
  backend_.clear_target(*slice.shadow);
  slice.covered.assign(static_cast<std::size_t>(window_), false);
  slice.covered_count = 0;
  slice.shadow_active = true;
}

void Reconstructor::recompute(SliceState& slice) {
  backend_.backproject_store(all_slots_, *slice.live, scale_, /*accumulate=*/false, 0,
                             slice.live->grid().depth);
  slice.rebuilt_rotation = rotation_;
  mark_live_current(slice);
}

void Reconstructor::build_slice_targets(SliceState& slice) {
  std::unique_ptr<ReconTarget> live = backend_.create_target(
      slice_grid(slice.spec.orientation, slice.spec.width, slice.spec.height));
  slice.live = std::move(live);
  slice.shadow.reset();
  slice.shadow_active = false;
  slice.covered.clear();
  recompute(slice);
  if (params_.window_mode == WindowMode::kPerRotation && scan_running_) start_shadow(slice);
}

}  // namespace slicestream
