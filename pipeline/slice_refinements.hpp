// Refinement of live slices (SetRefinement), owned by the reconstruct stage: for every refined
// slice, its plan (refinement_plan.hpp), its sinogram window (sinogram_window.hpp) and the
// scheduling of its refinements on the RefinementWorker.
//
// Data path: the slices' detector rows are announced to the preprocess stage
// (DetectorRowSelection), captured before the ramp filter and stored per window slot with every
// projection. When a window holds a row for every slot and the slice's live FBP image shows
// exactly that window, a refinement may start: a snapshot of both goes to the worker, which
// builds the system matrix when needed and runs `iterations` CGLS iterations from the FBP image
// (or measures its residual only). The result is published as the slice's refined stream and its
// residuals before and after are reported by GetStatus.
//
// Scheduling: at most one refinement at a time, per slice at most every interval_s and only when
// the window changed since the last one. While frames are queued, refinements may take at most a
// quarter of the wall time (as the preview): after one that took T the next waits 3 T. The
// reconstruct thread's own cost per refinement is one read of the slice and one copy of the
// window.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/detector_row_selection.hpp"
#include "pipeline/event_reporter.hpp"
#include "pipeline/metrics_registry.hpp"
#include "pipeline/pipeline_config.hpp"
#include "pipeline/refinement_plan.hpp"
#include "pipeline/refinement_worker.hpp"
#include "pipeline/sinogram_window.hpp"
#include "pipeline/stage_items.hpp"

namespace slicestream {

class SliceRefinements {
 public:
  using Clock = std::chrono::steady_clock;
  // Fills `image` (values and metadata) with the slice's live FBP image when it shows the
  // current window; false otherwise (e.g. per-rotation mode between two completed rotations).
  using ReadFbp = std::function<bool(std::uint32_t slice_id, SliceImage& image)>;
  using Publish = std::function<bool(PublishItem&&)>;

  SliceRefinements(const RefinementLimits& limits, Backend& backend, MetricsRegistry& metrics,
                   EventReporter& events, DetectorRowSelection& rows);

  // --- commands (slice_refinements.cpp)
  // `slice`: the live slice's spec, nullptr for an unknown id. The status carries a reason for
  // every refusal.
  Status configure(const SetRefinementCommand& command, const SetSliceCommand* slice);
  // A refined slice moved (SetSlice) or went away (RemoveSlice).
  void slice_changed(const SetSliceCommand& slice);
  void slice_removed(std::uint32_t slice_id);
  std::vector<RefinementStatus> status() const;

  // --- scan (slice_refinements.cpp). `geometry.vectors`: one per slot, before a rotation-axis
  // correction; `slices`: every live slice (default slices may have moved).
  void begin_scan(std::uint64_t scan_id, const ScanGeometry& geometry, double offset_px,
                  const std::vector<SetSliceCommand>& slices);
  void release_scan();
  void set_rotation_axis_offset(double offset_px);
  // After the store took the projection of `slot` (taken at `vector`).
  void on_projection(int slot, const ProjectionVector& vector, const CapturedRows& captured);
  // The store's slot is uncertain (a failed update): the windows forget it.
  void lose_slot(int slot);

  // --- scheduling (slice_refinements_schedule.cpp)
  void on_tick(Clock::time_point now, bool input_waiting, const ReadFbp& read_fbp,
               const Publish& publish);
  Clock::time_point next_deadline(Clock::time_point now) const;
  // At a drain: waits for the running refinement and publishes it.
  void finish(const Publish& publish);

 private:
  struct Entry {
    SetRefinementCommand settings;
    SetSliceCommand slice;
    std::uint64_t generation = 0;  // changes when results in flight no longer apply
    std::optional<RefinementPlan> plan;
    std::string unavailable;  // why there is no plan during a scan
    SinogramWindow window;
    std::shared_ptr<RefinerCache> cache = std::make_shared<RefinerCache>();
    bool in_flight = false;
    bool submitted_any = false;
    std::uint64_t submitted_version = 0;  // window version of the last refinement
    std::uint64_t blocked_version = 0;    // window version whose FBP image was not current
    bool blocked = false;
    Clock::time_point last_start{};
    Clock::time_point retry_after{};  // after a failure
    std::uint64_t sequence = 0;       // refined publications
    RefinementStatus last;            // counters and the newest result
  };

  // Plans `entry` for the current scan (or clears its plan); true when it has one.
  bool replan(Entry& entry);
  std::optional<RefinementProblem> check_matrix(const RefinementPlan& plan) const;
  ScanGeometry window_geometry() const;  // slot vectors, rotation-axis offset applied
  void update_row_selection();
  void reset_window(Entry& entry);
  bool due(const Entry& entry, Clock::time_point now, bool input_waiting) const;
  void start(std::uint32_t id, Entry& entry, SliceImage&& fbp, Clock::time_point now);
  void collect(Clock::time_point now, const Publish& publish);

  const RefinementLimits limits_;
  Backend& backend_;
  MetricsRegistry& metrics_;
  EventReporter& events_;
  DetectorRowSelection& rows_;
  std::map<std::uint32_t, Entry> entries_;
  std::uint64_t next_generation_ = 1;

  bool scan_ = false;  // a scan's store exists (running or ended)
  std::uint64_t scan_id_ = 0;
  ScanGeometry geometry_;  // slot vectors as stored, before the offset
  double offset_px_ = 0;
  Clock::time_point cooldown_until_{};  // share limit while frames are queued

  RefinementWorker worker_;  // last: joined first, before the caches its job may use
};

}  // namespace slicestream
