#include "pipeline/backend/update_plan.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>

namespace slicestream {
namespace {

bool same_map(const ProjectionMap& a, const ProjectionMap& b) {
  return std::memcmp(&a, &b, sizeof(ProjectionMap)) == 0;
}

// Empty when updates [begin, begin + count) can be applied, else why not.
std::string run_problem(const std::vector<ProjectionUpdate>& updates, std::size_t begin,
                        std::size_t count, const StoreSlots& slots) {
  const std::string& owner = slots.owner();
  for (std::size_t i = begin; i < begin + count; ++i) {
    const ProjectionUpdate& u = updates[i];
    if (!slots.contains(u.slot)) {
      return owner + ": slot " + std::to_string(u.slot) + " outside the window of " +
             std::to_string(slots.size());
    }
    if (!u.projection) return owner + ": replace_projection without a projection";
    for (const auto* list : {&u.live, &u.accumulate}) {
      for (const ReconTarget* target : *list) {
        if (target == nullptr) return owner + ": null reconstruction target";
      }
    }
  }
  return {};
}

// The length of the run from `begin` on in which no slot repeats, at most `max_run`.
std::size_t distinct_slot_run(const std::vector<ProjectionUpdate>& updates, std::size_t begin,
                              std::size_t max_run) {
  std::size_t end = begin;
  while (end < updates.size() && end - begin < std::max<std::size_t>(max_run, 1)) {
    const int slot = updates[end].slot;
    const bool repeated = std::any_of(updates.begin() + static_cast<std::ptrdiff_t>(begin),
                                      updates.begin() + static_cast<std::ptrdiff_t>(end),
                                      [slot](const ProjectionUpdate& u) { return u.slot == slot; });
    if (repeated) break;
    ++end;
  }
  return end - begin;
}

// The slots that earlier runs of the plan have stored, over the store as it was before the batch.
class PlannedStore {
 public:
  explicit PlannedStore(const StoreSlots& slots) : slots_(slots) {}

  // The map of the projection in `slot`, or null when it is empty.
  const ProjectionMap* stored(int slot) const {
    for (auto it = written_.rbegin(); it != written_.rend(); ++it) {
      if (it->slot == slot) return it->map;
    }
    return slots_.filled(slot) ? &slots_.map(slot) : nullptr;
  }
  void store(int slot, const ProjectionMap& map) { written_.push_back({slot, &map}); }

 private:
  struct Written {
    int slot;
    const ProjectionMap* map;
  };
  const StoreSlots& slots_;
  std::vector<Written> written_;
};

LiveUpdate live_update(const ProjectionUpdate& u, const ProjectionMap* old_map) {
  if (u.live.empty()) return LiveUpdate::kNone;
  if (old_map == nullptr) return LiveUpdate::kNew;
  return same_map(*old_map, u.map) ? LiveUpdate::kDifference : LiveUpdate::kNewMinusOld;
}

void add_sources(UpdateRun& run, ReconTarget* target,
                 std::initializer_list<PlannedSource> sources) {
  auto it = std::find_if(run.targets.begin(), run.targets.end(),
                         [target](const PlannedTarget& t) { return t.target == target; });
  if (it == run.targets.end()) {
    run.targets.push_back({target, {}});
    it = run.targets.end() - 1;
  }
  it->sources.insert(it->sources.end(), sources.begin(), sources.end());
}

UpdateRun plan_run(const std::vector<ProjectionUpdate>& updates, std::size_t begin,
                   std::size_t count, PlannedStore& store) {
  UpdateRun run;
  run.updates.reserve(count);
  for (std::size_t k = 0; k < count; ++k) {
    const ProjectionUpdate& u = updates[begin + k];
    const ProjectionMap* old_map = store.stored(u.slot);
    PlannedUpdate planned;
    planned.index = begin + k;
    planned.slot = u.slot;
    planned.live = live_update(u, old_map);
    if (old_map != nullptr) planned.old_map = *old_map;
    run.updates.push_back(planned);
  }
  for (std::size_t k = 0; k < count; ++k) {
    const ProjectionUpdate& u = updates[begin + k];
    for (ReconTarget* target : u.live) {
      switch (run.updates[k].live) {
        case LiveUpdate::kDifference:
          add_sources(run, target, {{k, SourceKind::kDifference}});
          break;
        case LiveUpdate::kNewMinusOld:
          add_sources(run, target, {{k, SourceKind::kNew}, {k, SourceKind::kOld}});
          break;
        default:
          add_sources(run, target, {{k, SourceKind::kNew}});
          break;
      }
    }
    for (ReconTarget* target : u.accumulate)
      add_sources(run, target, {{k, SourceKind::kNew}});
  }
  // Slots are stored after the run, so that the next run sees them.
  for (std::size_t k = 0; k < count; ++k)
    store.store(updates[begin + k].slot, updates[begin + k].map);
  return run;
}

}  // namespace

UpdatePlan plan_updates(const std::vector<ProjectionUpdate>& updates, const StoreSlots& slots,
                        std::size_t max_run) {
  UpdatePlan plan;
  PlannedStore store(slots);
  for (std::size_t begin = 0; begin < updates.size();) {
    const std::size_t count = distinct_slot_run(updates, begin, max_run);
    plan.refusal = run_problem(updates, begin, count, slots);
    if (!plan.refusal.empty()) break;
    plan.runs.push_back(plan_run(updates, begin, count, store));
    begin += count;
  }
  return plan;
}

}  // namespace slicestream
