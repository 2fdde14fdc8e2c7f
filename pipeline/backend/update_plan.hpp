// The plan of a batch of store updates (Backend::replace_projections), computed once from the
// batch and the store's slots and executed by every backend.
//
// Every update stores a projection in its slot and changes two kinds of targets:
//   live:       t += scale * (BP_map(new) - BP_old_map(old))   (old = 0 when the slot was empty)
//   accumulate: t += scale * BP_map(new)
// The plan cuts the batch into runs of distinct slots (at most `max_run` updates each), so that a
// backend can fuse a run into one pass over its store and one backprojection per target: within a
// run every slot's old projection is the one stored before the run. Per update it picks how the
// live targets get +new - old (the same-map rule: an unchanged map backprojects new - old once),
// and per target of a run it lists every projection of the run that reaches it, in batch order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "pipeline/backend/backend.hpp"
#include "pipeline/backend/store_slots.hpp"

namespace slicestream {

// How an update's live targets receive +BP(new) - BP(old).
enum class LiveUpdate {
  kNone,         // no live targets
  kNew,          // the slot was empty: +BP_map(new)
  kDifference,   // the stored projection has the same map: +BP_map(new - old), one backprojection
  kNewMinusOld,  // another map: +BP_map(new) - BP_old_map(old)
};

// One projection that a target backprojects.
enum class SourceKind {
  kNew,         // +BP_map(new)
  kDifference,  // +BP_map(new - old)
  kOld,         // -BP_old_map(old)
};

struct PlannedSource {
  std::size_t update = 0;  // index into UpdateRun::updates (a backend's scratch index)
  SourceKind kind = SourceKind::kNew;
};

struct PlannedTarget {
  ReconTarget* target = nullptr;
  std::vector<PlannedSource> sources;
};

struct PlannedUpdate {
  std::size_t index = 0;  // into the batch
  int slot = 0;
  LiveUpdate live = LiveUpdate::kNone;
  ProjectionMap old_map{};  // the slot's map before the run (kDifference, kNewMinusOld)
};

struct UpdateRun {
  std::vector<PlannedUpdate> updates;  // distinct slots, in batch order
  std::vector<PlannedTarget> targets;  // in the order the run first reaches them
};

struct UpdatePlan {
  std::vector<UpdateRun> runs;
  // Empty when the whole batch is planned. Otherwise why a run holds an invalid update (a slot
  // outside the window, no projection, a null target): the plan ends before that run, and a
  // backend throws this as a BackendError after executing the runs before it.
  std::string refusal;
};

// Plans the batch against `slots` as they are before it. Errors name the slots' owner.
UpdatePlan plan_updates(const std::vector<ProjectionUpdate>& updates, const StoreSlots& slots,
                        std::size_t max_run);

}  // namespace slicestream
