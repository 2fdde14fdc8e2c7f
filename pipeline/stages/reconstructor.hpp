// The reconstruct stage's logic: it owns the backend's scan state (projection store), the slice
// set, the sliding window / per-rotation bookkeeping, the preview and the commands. Everything
// here runs on the reconstruct thread, so nothing needs a lock.
//
// Sliding window: every projection updates every live slice by +BP(new) - BP(old) for its slot
// (Backend::replace_projections). Projections that were waiting together in the queue arrive as
// one batch (handle_projections) and go to the backend as one call, which may fuse them into one
// pass over the targets; rotation boundaries and completed shadows split a batch, so every
// decision sees the store as if the frames had come one by one. Float drift is bounded by a refresh
// every refresh_rotations rotations: a shadow target accumulates BP(new) during one rotation, slots
// the rotation did not cover are added from the store, and the shadow replaces the live slice.
// Per-rotation: the same shadow mechanism runs every rotation and its result is published.
//
// A filter change applies to projections filtered from then on: the window turns over within
// one rotation, after which every slice is again consistent with the new filter.
//
// Refinement (SetRefinement) of live slices is delegated to SliceRefinements, which the
// reconstructor feeds with every projection's captured detector rows and asks on every tick.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/backend/backend.hpp"
#include "pipeline/refinement/detector_row_selection.hpp"
#include "pipeline/metrics/event_reporter.hpp"
#include "pipeline/metrics/metrics_registry.hpp"
#include "pipeline/messages/pipeline_config.hpp"
#include "pipeline/stages/preview_builder.hpp"
#include "pipeline/refinement/slice_refinements.hpp"
#include "pipeline/messages/stage_items.hpp"

namespace slicestream {

class Reconstructor {
 public:
  using Clock = std::chrono::steady_clock;
  // Hands a publication to the publish stage; false when the pipeline is stopping.
  using Publish = std::function<bool(PublishItem&&)>;
  using MetricsSource = std::function<MetricsSnapshot()>;

  Reconstructor(const PipelineConfig& config, Backend& backend, MetricsRegistry& metrics,
                EventReporter& events, DetectorRowSelection& rows, Publish publish,
                MetricsSource metrics_source);
  ~Reconstructor();
  Reconstructor(const Reconstructor&) = delete;
  Reconstructor& operator=(const Reconstructor&) = delete;

  void handle(StageItem&& item);
  // Projections that waited together in the queue, in arrival order.
  void handle_projections(std::vector<ProjectionItem>& items);
  // Work that is due without input: rate-limited publications, preview units, flush markers.
  // `input_waiting`: frames are queued (the preview then takes only a share of the time).
  void on_tick(Clock::time_point now, bool input_waiting);
  // When on_tick() next has something to do (now when preview work is pending).
  Clock::time_point next_deadline(Clock::time_point now) const;
  // Drain at stop: publishes every dirty slice now and releases the flush markers.
  void finish();

 private:
  struct SliceState {
    SetSliceCommand spec;
    bool is_default = false;
    std::unique_ptr<ReconTarget> live;
    std::unique_ptr<ReconTarget> shadow;  // kept between rotations for reuse
    bool shadow_active = false;
    std::vector<bool> covered;  // slots the shadow received this rotation
    std::size_t covered_count = 0;
    std::uint64_t rebuilt_rotation = 0;  // the live target was last rebuilt in this rotation
    bool dirty = false;
    Clock::time_point last_publish{};
    std::uint64_t sequence = 0;
    // What the live target shows.
    std::uint64_t projections_integrated = 0;
    std::uint64_t newest_timestamp_ns = 0;
    std::uint64_t newest_arrival_ns = 0;
  };

  // A projection handed to the backend with the batch, integrated when it has taken effect.
  struct PendingFrame {
    FrameMeta meta;
    ProjectionPlacement placement;
    CapturedRows captured;  // detector rows for slice refinement (empty when none are selected)
  };

  // --- data path (reconstructor.cpp)
  void on_scan_start(ScanStartItem& item);
  void on_calibration(CalibrationItem& item);
  // Builds the projection's target lists (shadow coverage included) and adds it to the batch.
  void queue_projection(ProjectionItem& item);
  // Hands the batch to the backend; failures lose only what the backend consumed.
  void flush_batch();
  void integrate(const PendingFrame& frame);
  // After a failed update: shadows dropped, live targets rebuilt from the store.
  void rebuild_after_failure();
  void complete_full_shadows();
  void on_scan_end(const ScanEndItem& item);
  void release_scan();
  void place_default_slices();
  ProjectionMap map_of(const ProjectionVector& vector) const;
  void advance_rotation(std::uint64_t rotation);
  // Adds the slots the shadow did not receive from the store and makes it the live target.
  void complete_shadow(std::uint32_t id, SliceState& slice);
  void start_shadows();
  void start_shadow(SliceState& slice);
  void recompute(SliceState& slice);
  void mark_live_current(SliceState& slice);
  // The live image of a slice with its metadata (the sequence is left to the caller).
  SliceImage live_image(std::uint32_t id, const SliceState& slice);
  void publish_slice(std::uint32_t id, SliceState& slice, Clock::time_point now);
  // SliceRefinements::ReadFbp: the live image when it shows the current window.
  bool read_current_fbp(std::uint32_t id, SliceImage& image);
  void publish_due(Clock::time_point now, bool force);
  void run_preview(Clock::time_point now, bool input_waiting);
  void release_markers_if_clean();
  void backend_error(const std::string& what, const std::exception& e, std::uint64_t frames);

  // --- commands (reconstructor_commands.cpp)
  void on_command(CommandItem& item);
  CommandReply set_slice(const SetSliceCommand& command);
  CommandReply remove_slice(const RemoveSliceCommand& command);
  CommandReply get_slice(const GetSliceCommand& command);
  CommandReply get_status();
  CommandReply set_parameters(const SetParametersCommand& command);
  CommandReply set_refinement(const SetRefinementCommand& command);
  Status validate_slice_size(int width, int height) const;
  void apply_window_mode(WindowMode mode);
  void apply_rotation_axis_offset(double offset_px);
  // Creates the targets of a slice for the current scan and fills them from the store.
  void build_slice_targets(SliceState& slice);

  const PipelineConfig config_;
  Backend& backend_;
  MetricsRegistry& metrics_;
  EventReporter& events_;
  Publish publish_;
  MetricsSource metrics_source_;
  Parameters params_;

  std::map<std::uint32_t, SliceState> slices_;
  bool client_configured_slices_ = false;

  // The scan whose store the backend holds (kept after ScanEnd so GetSlice still works).
  bool store_ready_ = false;
  bool scan_running_ = false;
  ScanDescription scan_;
  std::string scan_state_ = "idle";
  int window_ = 0;
  float scale_ = 0;
  std::vector<int> all_slots_;
  std::vector<ProjectionVector> slot_vectors_;  // where each slot's stored projection was taken
  std::uint64_t integrated_ = 0;                // projections integrated in this scan
  std::uint64_t newest_timestamp_ns_ = 0;
  std::uint64_t newest_arrival_ns_ = 0;
  bool any_projection_ = false;
  std::uint64_t rotation_ = 0;
  std::vector<std::uint64_t> unpublished_arrivals_;  // integrated, in no publication yet
  std::vector<std::uint64_t> rotation_arrivals_;     // per-rotation: waiting for completion

  PreviewBuilder preview_;
  std::uint64_t store_version_ = 0;  // counts store changes, so the preview rebuilds only then
  std::uint64_t preview_version_ = 0;
  std::uint64_t preview_integrated_ = 0;
  Clock::time_point preview_started_{};
  Clock::time_point preview_next_unit_{};
  bool preview_forced_ = false;

  std::vector<FlushMarker> markers_;

  std::vector<ProjectionUpdate> batch_updates_;  // queued for the backend, not yet handed over
  std::vector<PendingFrame> batch_frames_;
  SliceRefinements refinements_;  // last: its worker stops before the rest goes
};

}  // namespace slicestream
