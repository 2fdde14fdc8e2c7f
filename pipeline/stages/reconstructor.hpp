// The reconstruct stage's logic: it owns the backend's scan state (projection store), the slices,
// the preview and the commands, and runs on the reconstruct thread only, so nothing needs a lock.
// Its parts, each in a file of its own:
//   SliceSet             the slices with their live and shadow targets (slice_set.hpp)
//   PublicationSchedule  which slices are due for publication when (publication_schedule.hpp)
//   PreviewBuilder       the preview volume, rebuilt in units (preview_builder.hpp), and
//   PreviewTiming        when a rebuild is due (preview_timing.hpp)
//   OnDemandSlices       GetSlice requests, computed in bands of rows (on_demand_slices.hpp)
//   ThreadShare          the share of the thread the preview, GetSlice units and slice builds
//                        take while frames are queued (thread_share.hpp)
//   ArrivalLog           arrival times of integrated frames until published (arrival_log.hpp)
//   SliceRefinements     refinement and data-consistency checks (pipeline/refinement/)
//
// Sliding window: every projection updates every live slice by +BP(new) - BP(old) for its slot
// (Backend::replace_projections). Projections that waited together in the queue arrive as one
// batch (handle_projections) and go to the backend as one call; a rotation boundary or a
// completed shadow ends a batch, so every decision sees the store as if the frames had come one
// by one. Float drift is bounded by a refresh every refresh_rotations rotations: a shadow target
// accumulates BP(new) during one rotation, slots the rotation did not cover are added from the
// store, and the shadow replaces the live slice. Per-rotation: the same shadow mechanism runs
// every rotation and its result is published.
//
// A filter change applies to projections filtered from then on: the window turns over within
// one rotation, after which every slice is again consistent with the new filter.
//
// A slice that needs a full recompute (SetSlice, a rotation-axis change) is computed at once when
// no frame waits and that is quick; else it is built in units of slots (SliceSet::start_build)
// within the ThreadShare, and shown once complete.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/backend/backend.hpp"
#include "pipeline/messages/pipeline_config.hpp"
#include "pipeline/messages/scan_state.hpp"
#include "pipeline/messages/stage_items.hpp"
#include "pipeline/metrics/event_reporter.hpp"
#include "pipeline/metrics/metrics_registry.hpp"
#include "pipeline/refinement/detector_row_selection.hpp"
#include "pipeline/refinement/slice_refinements.hpp"
#include "pipeline/stages/arrival_log.hpp"
#include "pipeline/stages/on_demand_slices.hpp"
#include "pipeline/stages/preview_builder.hpp"
#include "pipeline/stages/preview_timing.hpp"
#include "pipeline/stages/publication_backlog.hpp"
#include "pipeline/stages/publication_schedule.hpp"
#include "pipeline/stages/slice_set.hpp"
#include "pipeline/stages/thread_share.hpp"

namespace slicestream {

class Reconstructor {
 public:
  using Clock = std::chrono::steady_clock;
  // Hands a publication to the publish stage; false when the pipeline is stopping.
  using Publish = std::function<bool(PublishItem&&)>;
  using MetricsSource = std::function<MetricsSnapshot()>;
  // Whether projections wait in the stage's queue now.
  using FramesWaiting = std::function<bool()>;

  Reconstructor(const PipelineConfig& config, Backend& backend, MetricsRegistry& metrics,
                EventReporter& events, DetectorRowSelection& rows, Publish publish,
                PublicationBacklog& backlog, MetricsSource metrics_source,
                FramesWaiting frames_waiting = nullptr);
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
  // A projection handed to the backend with the batch, integrated when it has taken effect.
  struct PendingFrame {
    FrameMeta meta;
    ProjectionPlacement placement;
    CapturedRows captured;  // detector rows for slice refinement (empty when none are selected)
  };

  // --- data path (reconstructor.cpp)
  void on_scan_start(ScanStartItem& item);
  // Default slices on the scan's box, box slices mapped onto it, world slices that miss it
  // reported (SliceSet::place_on_box).
  void place_slices_on_box();
  // The longer side of a default slice: default_slice_size, or the detector width.
  int default_slice_side() const;
  // The slices' targets for the new scan (a slice whose targets do not fit is removed).
  void build_all_slice_targets();
  void on_calibration(CalibrationItem& item);
  // Builds the projection's target lists (shadow coverage included) and adds it to the batch.
  void queue_projection(ProjectionItem& item);
  // Hands the batch to the backend; failures lose only what the backend consumed.
  void flush_batch();
  // Counts and announces the filtered values the store clamped since the last call.
  void report_clamped_values();
  void integrate(const PendingFrame& frame);
  // After a failed update: shadows dropped, live targets rebuilt from the store.
  void rebuild_after_failure();
  void complete_full_shadows();
  void on_scan_end(const ScanEndItem& item);
  void release_scan();
  ProjectionMap map_of(const ProjectionVector& vector) const;
  void advance_rotation(std::uint64_t rotation);
  // Completes the shadow from the store and swaps it in (per-rotation: it is shown now).
  void complete_shadow(std::uint32_t id, Slice& slice);
  void start_shadows();
  void start_shadow(std::uint32_t id, Slice& slice);
  void recompute(Slice& slice) { slices_.recompute(slice, content_, rotation_); }
  // Creates the targets of a slice for the current scan and fills them from the store.
  void build_slice_targets(Slice& slice);
  // Fills the slice's live target anew from the store (reconstructor_builds.cpp): at once when no
  // frame waits and its first unit says the rest is quick (true: live now), else it is built in
  // units beside the frames (run_slice_build). Throws BackendError.
  bool compute_slice(Slice& slice);
  bool frames_waiting() const { return frames_waiting_ && frames_waiting_(); }
  void backend_error(const std::string& what, const std::exception& e, std::uint64_t frames);

  // --- output (reconstructor_publication.cpp)
  // The live image of a slice with its metadata (the sequence is left to the caller); its values
  // are read back at once, or (`values` false) left to a readback.
  SliceImage live_image(std::uint32_t id, const Slice& slice, bool values = true);
  // `moved`: the slice's first image at a new place (SliceImage::moved).
  void publish_slice(std::uint32_t id, Slice& slice, Clock::time_point now, bool moved = false);
  // SliceRefinements::ReadFbp: the live image when it shows the current window.
  bool read_current_fbp(std::uint32_t id, SliceImage& image);
  // The live image of `id` changed: due for publication (an update of it held back for the
  // publish stage is coalesced into this one, and counted).
  void image_changed(std::uint32_t id);
  // Publishes the due slices; one whose publications the publish stage has not taken yet
  // (PublicationBacklog) stays due unless `force`.
  void publish_due(Clock::time_point now, bool force);
  void run_preview(Clock::time_point now, bool input_waiting);
  // One unit of the oldest GetSlice, within the thread share.
  void run_on_demand(Clock::time_point now, bool input_waiting);
  // One unit of a slice built in units (reconstructor_builds.cpp), within the thread share.
  void run_slice_build(Clock::time_point now, bool input_waiting);
  // One unit of the build of `id`; true when the build is over: the slice shown (published), or
  // removed after a backend failure (reported).
  bool run_build_unit(std::uint32_t id, Slice& slice);
  // A slice whose build failed goes, with an error event (backend_error) saying why.
  void remove_failed_slice(std::uint32_t id, const std::exception& e);
  void finish_slice_builds();  // at stop: every build completed at once
  void release_markers_if_clean();

  // --- commands (reconstructor_commands.cpp)
  void on_command(CommandItem& item);
  CommandReply set_slice(const SetSliceCommand& command);
  CommandReply remove_slice(const RemoveSliceCommand& command);
  CommandReply reset_slices();
  // Refuses at once, or hands the request to on_demand_ (takes `on_reply`, sets *deferred).
  CommandReply get_slice(const GetSliceCommand& command, ReplyCallback& on_reply, bool* deferred);
  CommandReply get_volume(const GetVolumeCommand& command);  // reconstructor_volume.cpp
  // The current window backprojected onto `target` (GetVolume): its values.
  std::vector<float> reconstruct_window(ReconTarget& target);
  CommandReply get_status();
  CommandReply set_parameters(const SetParametersCommand& command);
  CommandReply set_refinement(const SetRefinementCommand& command);
  Status validate_slice_size(int width, int height) const;
  void apply_window_mode(WindowMode mode);
  void apply_rotation_axis_offset(double offset_px);
  bool sliding() const { return params_.window_mode == WindowMode::kSlidingWindow; }

  const PipelineConfig config_;
  Backend& backend_;
  MetricsRegistry& metrics_;
  EventReporter& events_;
  Publish publish_;
  PublicationBacklog& backlog_;
  MetricsSource metrics_source_;
  FramesWaiting frames_waiting_;
  Parameters params_;

  SliceSet slices_;
  PublicationSchedule schedule_;
  ArrivalLog arrivals_;

  // The scan whose store the backend holds (kept after ScanEnd so GetSlice still works).
  bool store_ready_ = false;
  bool scan_running_ = false;
  ScanDescription scan_;
  ScanState scan_state_ = ScanState::kIdle;
  std::string scan_end_reason_;                 // why the scan ended (empty while it runs)
  std::vector<ProjectionVector> slot_vectors_;  // where each slot's stored projection was taken
  WindowContent content_;                       // what the store holds
  bool any_projection_ = false;
  std::uint64_t rotation_ = 0;
  std::uint64_t clamped_values_seen_ = 0;  // the backend's store_values_clamped() last reported

  PreviewBuilder preview_;
  PreviewTiming preview_timing_;
  std::uint64_t preview_integrated_ = 0;  // what the preview being built shows
  OnDemandSlices on_demand_{backend_};
  ThreadShare background_;  // preview, GetSlice and slice build units while frames are queued

  std::vector<FlushMarker> markers_;

  std::vector<ProjectionUpdate> batch_updates_;  // queued for the backend, not yet handed over
  std::vector<PendingFrame> batch_frames_;
  SliceRefinements refinements_;  // last: its worker stops before the rest goes
};

}  // namespace slicestream
