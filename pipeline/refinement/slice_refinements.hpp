// Refinement and data-consistency checks of live slices, owned by the reconstruct stage: for
// every live slice, its plan (refinement_plan.hpp), its sinogram window (sinogram_window.hpp)
// and the scheduling of its jobs on the RefinementWorker.
//
// Two kinds of job, one mechanism: a slice switched on by SetRefinement is refined (or, with 0
// iterations, its residual measured) by its own settings; every other live slice that can be
// checked has its data-consistency residual measured automatically, every
// RefinementLimits::residual_interval_s at most (0: off). The matrices of these automatic checks
// together stay within max_matrix_bytes (estimated); a slice that cannot be checked reports why.
//
// Data path: the slices' detector rows are announced to the preprocess stage
// (DetectorRowSelection), captured before the ramp filter and stored per window slot with every
// projection. When a window holds a row for every slot and the slice's live FBP image shows
// exactly that window, a job may start: a snapshot of both goes to the worker, which builds the
// system matrix when needed (cached per slice) and runs `iterations` CGLS iterations from the FBP
// image (or measures its residual only). A refined image is published as the slice's refined
// stream; residuals are reported by GetStatus and in the metrics.
//
// Scheduling: at most one job at a time, refinements before automatic checks, per slice at most
// every interval and only when the window changed since the last one. While frames are queued,
// jobs may take at most a quarter of the wall time (as the preview): after one that took T the
// next waits 3 T. The reconstruct thread's own cost per job is one read of the slice and one copy
// of the window.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/messages/pipeline_config.hpp"
#include "pipeline/messages/stage_items.hpp"
#include "pipeline/metrics/event_reporter.hpp"
#include "pipeline/metrics/metrics_registry.hpp"
#include "pipeline/refinement/detector_row_selection.hpp"
#include "pipeline/refinement/refinement_noise.hpp"
#include "pipeline/refinement/refinement_plan.hpp"
#include "pipeline/refinement/refinement_worker.hpp"
#include "pipeline/refinement/sinogram_window.hpp"

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
  // A live slice was set (new, moved, or set again where it was) or went away.
  void slice_changed(const SetSliceCommand& slice);
  void slice_removed(std::uint32_t slice_id);
  // The refined slices (SetRefinement).
  std::vector<RefinementStatus> status() const;
  // Every live slice (slice_refinements_status.cpp).
  std::vector<SliceResidual> residuals(Clock::time_point now) const;

  // --- scan (slice_refinements.cpp). `geometry.vectors`: one per slot, before a rotation-axis
  // correction; `slices`: every live slice (default slices may have moved).
  void begin_scan(std::uint64_t scan_id, const ScanGeometry& geometry, double offset_px,
                  const std::vector<SetSliceCommand>& slices);
  // The scan's ScanEnd: its store stays (refinements of its final window still run), but no
  // more projections come.
  void end_scan() { scan_running_ = false; }
  void release_scan();
  // The scan's averaged dark and flat frames (the noise level of the discrepancy stop).
  void set_calibration(const std::vector<float>& dark, const std::vector<float>& flat);
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
  // One live slice.
  struct Entry {
    SetSliceCommand slice;
    // Set by SetRefinement; without it the slice's residual is checked automatically.
    std::optional<SetRefinementCommand> refinement;
    std::uint64_t generation = 0;  // changes when results in flight no longer apply
    std::optional<RefinementPlan> plan;
    std::optional<RefinementProblem> unavailable;  // why there is no plan
    SinogramWindow window;
    // The window's room in the memory budget, with a job's copies of it and of the FBP image.
    std::shared_ptr<MemoryCharge> memory;
    std::shared_ptr<RefinerCache> cache = std::make_shared<RefinerCache>();
    // Automatic checks capture the slice's detector rows only from arming (the check is due)
    // until the check starts: one window of row reads per interval instead of one per frame of
    // the whole scan. On the CUDA backend each read waits for the device on the preprocess
    // thread, which cost up to half the ingest rate at high frame rates when every frame did it.
    bool capturing = false;
    bool in_flight = false;
    bool submitted_any = false;
    std::uint64_t submitted_version = 0;  // window version of the last job
    // The live FBP image lagged window version lagging_version: that window is looked at again
    // from lagging_until on (a changed window at once); {} when it did not lag.
    std::uint64_t lagging_version = 0;
    Clock::time_point lagging_until{};
    Clock::time_point last_start{};
    Clock::time_point retry_after{};  // after a failure
    std::string failure;              // of the last job, until one succeeds
    std::uint64_t sequence = 0;       // refined publications
    RefinementStatus last;            // refinement counters and the newest result
    SliceResidual residual;           // the newest residual (has_residual) and where it came from
    Clock::time_point residual_at{};
  };

  // What the slice's jobs do: its refinement's settings or the automatic check's.
  int iterations(const Entry& entry) const;
  double interval_s(const Entry& entry) const;
  // A refinement, or an automatic check while those are on.
  bool wanted(const Entry& entry) const;
  // RefinementStatus::state and SliceResidual::state ("off" only for the latter).
  std::string state_of(const Entry& entry) const;

  // The matrices planned so far by replan_all: every distinct 2D problem once, and the estimated
  // bytes of those only automatic checks use (refinements' problems are free for checks).
  struct MatrixBudget {
    std::vector<RefinementSetup> setups;
    std::size_t check_bytes = 0;
  };
  // Plans every entry for the current scan (or clears their plans), lets entries with equal 2D
  // problems share one matrix (refiner_sharing.hpp) and announces their rows. Automatic checks
  // take what is left of their matrix budget in slice-id order.
  void replan_all();
  // Plans `entry` (or clears its plan); true when it has one, with its 2D problem in `setup`.
  bool replan(Entry& entry, MatrixBudget& budget, RefinementSetup* setup);
  // Bytes of a slice's sinogram window and of a job's copies (window and FBP image).
  std::size_t window_bytes(const SetSliceCommand& slice) const;
  // Charges the entry's window_bytes to the memory budget (a problem when there is no room).
  std::optional<RefinementProblem> charge_window(Entry& entry);
  // Refuses a matrix over the limit; `setup` and `bytes` get the 2D problem and its estimate.
  std::optional<RefinementProblem> check_matrix(const RefinementPlan& plan,
                                                RefinementSetup* setup = nullptr,
                                                std::size_t* bytes = nullptr) const;
  // Refuses a refiner the backend has no memory for now ("out_of_memory").
  std::optional<RefinementProblem> check_memory(const RefinementPlan& plan) const;
  // A slice moved or a new scan began: results in flight no longer apply and the residual goes.
  void forget_results(std::uint32_t id, Entry& entry);
  ScanGeometry window_geometry() const;  // slot vectors, rotation-axis offset applied
  void update_row_selection();
  // Whether the preprocess stage captures the slice's rows now (refinements: always).
  static bool captures(const Entry& entry);
  // Arms the automatic checks whose interval has passed; true when any was armed.
  bool arm_checks(Clock::time_point now);
  void reset_window(Entry& entry);
  // Frees the slice's system matrix (a running job keeps its own reference until it ends).
  static void drop_matrix(Entry& entry);
  // The earliest start of the slice's next job (or arming of its next check): its interval after
  // the last start, and not before a failure's retry time.
  Clock::time_point next_start(const Entry& entry) const;
  // The entry's live image lagged its current window, which is not to be looked at yet.
  static bool lagging(const Entry& entry, Clock::time_point now);
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

  bool scan_ = false;          // a scan's store exists (running or ended)
  bool scan_running_ = false;  // and more of its projections may come
  std::uint64_t scan_id_ = 0;
  ScanGeometry geometry_;     // slot vectors as stored, before the offset
  OpenBeamCounts open_beam_;  // of the scan's calibration; unknown without flats
  double offset_px_ = 0;
  Clock::time_point cooldown_until_{};  // share limit while frames are queued
  // The cache of the job on the worker (from submission until its outcome is collected): the
  // reconstruct thread must not read it.
  std::shared_ptr<RefinerCache> busy_cache_;

  RefinementWorker worker_;  // last: joined first, before the caches its job may use
};

}  // namespace slicestream
