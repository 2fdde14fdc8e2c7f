// The shared update plan (pipeline/backend/update_plan.hpp): runs of distinct slots, the same-map
// rule, per-target source lists, and a randomised check that executing the plan gives exactly what
// the updates one by one give.
#include "pipeline/backend/update_plan.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

namespace slicestream {
namespace {

// A projection reduced to one number: BP_map(p) of it is map.weight * value.
class ScalarProjection final : public ProjectionBuffer {
 public:
  explicit ScalarProjection(double v) : value(v) {}
  double value;
};

ProjectionMap map_with(float id, float weight) {
  ProjectionMap map{};
  map.col_coef[0] = id;
  map.weight = weight;
  return map;
}

ProjectionUpdate update(int slot, const ProjectionMap& map, std::vector<ReconTarget*> live,
                        std::vector<ReconTarget*> accumulate, double value = 1) {
  ProjectionUpdate u;
  u.slot = slot;
  u.map = map;
  u.projection = std::make_unique<ScalarProjection>(value);
  u.live = std::move(live);
  u.accumulate = std::move(accumulate);
  return u;
}

double value_of(const ProjectionUpdate& u) {
  return static_cast<const ScalarProjection&>(*u.projection).value;
}

const GridSpec kGrid = slice_grid(SliceOrientation{}, 2, 2);

std::vector<SourceKind> kinds(const PlannedTarget& target) {
  std::vector<SourceKind> out;
  for (const PlannedSource& s : target.sources)
    out.push_back(s.kind);
  return out;
}

TEST(UpdatePlan, EmptySlotsGiveTheNewProjectionToLiveAndAccumulateTargets) {
  ReconTarget live(kGrid), shadow(kGrid);
  StoreSlots slots("test", 4);
  std::vector<ProjectionUpdate> batch;
  batch.push_back(update(0, map_with(0, 1), {&live}, {&shadow}));
  batch.push_back(update(2, map_with(2, 1), {&live}, {}));
  const UpdatePlan plan = plan_updates(batch, slots, 8);
  ASSERT_EQ(plan.runs.size(), 1u);
  const UpdateRun& run = plan.runs[0];
  ASSERT_EQ(run.updates.size(), 2u);
  EXPECT_EQ(run.updates[0].live, LiveUpdate::kNew);
  EXPECT_EQ(run.updates[1].slot, 2);
  ASSERT_EQ(run.targets.size(), 2u);
  EXPECT_EQ(run.targets[0].target, &live) << "targets in the order the run first reaches them";
  EXPECT_EQ(kinds(run.targets[0]), (std::vector<SourceKind>{SourceKind::kNew, SourceKind::kNew}));
  EXPECT_EQ(run.targets[0].sources[1].update, 1u);
  EXPECT_EQ(run.targets[1].target, &shadow);
  EXPECT_EQ(kinds(run.targets[1]), std::vector<SourceKind>{SourceKind::kNew});
}

TEST(UpdatePlan, AnUnchangedMapBackprojectsTheDifferenceOnce) {
  ReconTarget live(kGrid), shadow(kGrid);
  StoreSlots slots("test", 3);
  slots.store(1, map_with(1, 0.5f));
  std::vector<ProjectionUpdate> batch;
  batch.push_back(update(1, map_with(1, 0.5f), {&live}, {&shadow}));
  const UpdatePlan plan = plan_updates(batch, slots, 8);
  ASSERT_EQ(plan.runs.size(), 1u);
  EXPECT_EQ(plan.runs[0].updates[0].live, LiveUpdate::kDifference);
  EXPECT_EQ(kinds(plan.runs[0].targets[0]), std::vector<SourceKind>{SourceKind::kDifference});
  EXPECT_EQ(kinds(plan.runs[0].targets[1]), std::vector<SourceKind>{SourceKind::kNew})
      << "an accumulating target takes the new projection alone";
}

TEST(UpdatePlan, AnotherMapBackprojectsNewAndOldWithTheOldMap) {
  ReconTarget live(kGrid);
  StoreSlots slots("test", 3);
  slots.store(2, map_with(2, 0.5f));
  std::vector<ProjectionUpdate> batch;
  batch.push_back(update(2, map_with(7, 0.25f), {&live}, {}));
  const UpdatePlan plan = plan_updates(batch, slots, 8);
  const PlannedUpdate& planned = plan.runs.at(0).updates.at(0);
  EXPECT_EQ(planned.live, LiveUpdate::kNewMinusOld);
  EXPECT_EQ(planned.old_map.col_coef[0], 2.0f);
  EXPECT_EQ(planned.old_map.weight, 0.5f);
  EXPECT_EQ(kinds(plan.runs[0].targets[0]),
            (std::vector<SourceKind>{SourceKind::kNew, SourceKind::kOld}));
}

TEST(UpdatePlan, WithoutLiveTargetsNothingIsDifferenced) {
  ReconTarget shadow(kGrid);
  StoreSlots slots("test", 2);
  slots.store(0, map_with(0, 1));
  std::vector<ProjectionUpdate> batch;
  batch.push_back(update(0, map_with(0, 1), {}, {&shadow}));
  const UpdatePlan plan = plan_updates(batch, slots, 8);
  EXPECT_EQ(plan.runs.at(0).updates.at(0).live, LiveUpdate::kNone);
  EXPECT_EQ(kinds(plan.runs[0].targets.at(0)), std::vector<SourceKind>{SourceKind::kNew});
}

TEST(UpdatePlan, ARepeatedSlotStartsARunThatSeesTheEarlierOne) {
  ReconTarget live(kGrid);
  StoreSlots slots("test", 4);
  std::vector<ProjectionUpdate> batch;
  batch.push_back(update(1, map_with(1, 1), {&live}, {}));
  batch.push_back(update(2, map_with(2, 1), {&live}, {}));
  batch.push_back(update(1, map_with(1, 1), {&live}, {}));
  const UpdatePlan plan = plan_updates(batch, slots, 8);
  ASSERT_EQ(plan.runs.size(), 2u);
  EXPECT_EQ(plan.runs[0].updates.size(), 2u);
  ASSERT_EQ(plan.runs[1].updates.size(), 1u);
  EXPECT_EQ(plan.runs[1].updates[0].index, 2u);
  EXPECT_EQ(plan.runs[1].updates[0].live, LiveUpdate::kDifference)
      << "the first run stored slot 1 with the same map";
  EXPECT_FALSE(slots.filled(1)) << "planning changes nothing";
}

TEST(UpdatePlan, RunsHoldAtMostMaxRunUpdates) {
  ReconTarget live(kGrid);
  StoreSlots slots("test", 8);
  std::vector<ProjectionUpdate> batch;
  for (int slot = 0; slot < 5; ++slot)
    batch.push_back(update(slot, map_with(static_cast<float>(slot), 1), {&live}, {}));
  const UpdatePlan plan = plan_updates(batch, slots, 2);
  ASSERT_EQ(plan.runs.size(), 3u);
  EXPECT_EQ(plan.runs[0].updates.size(), 2u);
  EXPECT_EQ(plan.runs[1].updates.size(), 2u);
  EXPECT_EQ(plan.runs[2].updates.size(), 1u);
  EXPECT_EQ(plan.runs[2].updates[0].index, 4u);
  EXPECT_EQ(plan.runs[1].targets.at(0).sources.at(1).update, 1u) << "indices within the run";
}

TEST(UpdatePlan, AnInvalidUpdateEndsThePlanBeforeItsRun) {
  ReconTarget live(kGrid);
  StoreSlots slots("test", 3);
  auto batch_with = [&](ProjectionUpdate bad) {
    std::vector<ProjectionUpdate> batch;
    batch.push_back(update(0, map_with(0, 1), {&live}, {}));
    batch.push_back(update(1, map_with(1, 1), {&live}, {}));
    batch.push_back(update(0, map_with(0, 1), {&live}, {}));  // starts the second run
    batch.push_back(std::move(bad));
    return batch;
  };
  const UpdatePlan outside =
      plan_updates(batch_with(update(3, map_with(0, 1), {&live}, {})), slots, 8);
  ASSERT_EQ(outside.runs.size(), 1u) << "the run before the invalid one is planned";
  EXPECT_EQ(outside.runs[0].updates.size(), 2u);
  EXPECT_NE(outside.refusal.find("test: slot 3 outside the window of 3"), std::string::npos)
      << outside.refusal;

  ProjectionUpdate missing = update(2, map_with(2, 1), {&live}, {});
  missing.projection.reset();
  const UpdatePlan no_projection = plan_updates(batch_with(std::move(missing)), slots, 8);
  EXPECT_EQ(no_projection.runs.size(), 1u);
  EXPECT_NE(no_projection.refusal.find("without a projection"), std::string::npos);

  const UpdatePlan null_target =
      plan_updates(batch_with(update(2, map_with(2, 1), {}, {nullptr})), slots, 8);
  EXPECT_EQ(null_target.runs.size(), 1u);
  EXPECT_NE(null_target.refusal.find("null reconstruction target"), std::string::npos);

  std::vector<ProjectionUpdate> valid = batch_with(update(2, map_with(2, 1), {&live}, {}));
  EXPECT_TRUE(plan_updates(valid, slots, 8).refusal.empty());
}

// A store of scalar projections and targets of one value: the plan executed as a backend would,
// and the updates one by one as Backend::replace_projections defines them.
struct ScalarStore {
  std::map<int, std::pair<double, ProjectionMap>> slots;
  std::map<const ReconTarget*, double> targets;

  void apply_plan(const UpdatePlan& plan, const std::vector<ProjectionUpdate>& batch) {
    for (const UpdateRun& run : plan.runs) {
      for (const PlannedTarget& target : run.targets) {
        for (const PlannedSource& source : target.sources) {
          const PlannedUpdate& planned = run.updates[source.update];
          const ProjectionUpdate& u = batch[planned.index];
          const double old_value = slots.count(u.slot) ? slots[u.slot].first : 0.0;
          double& t = targets[target.target];
          if (source.kind == SourceKind::kNew) t += u.map.weight * value_of(u);
          if (source.kind == SourceKind::kDifference) t += u.map.weight * (value_of(u) - old_value);
          if (source.kind == SourceKind::kOld) t -= planned.old_map.weight * old_value;
        }
      }
      for (const PlannedUpdate& planned : run.updates)
        slots[planned.slot] = {value_of(batch[planned.index]), batch[planned.index].map};
    }
  }

  void apply_one_by_one(const std::vector<ProjectionUpdate>& batch) {
    for (const ProjectionUpdate& u : batch) {
      const auto old = slots.find(u.slot);
      const double removed =
          old == slots.end() ? 0.0 : old->second.second.weight * old->second.first;
      for (const ReconTarget* t : u.live)
        targets[t] += u.map.weight * value_of(u) - removed;
      for (const ReconTarget* t : u.accumulate)
        targets[t] += u.map.weight * value_of(u);
      slots[u.slot] = {value_of(u), u.map};
    }
  }
};

TEST(UpdatePlan, ExecutingThePlanEqualsTheUpdatesOneByOne) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<double> value(-1, 1);
  std::uniform_int_distribution<int> pick(0, 5);
  constexpr int kSlots = 6;
  std::vector<std::unique_ptr<ReconTarget>> owned;
  std::vector<ReconTarget*> targets;
  for (int i = 0; i < 4; ++i) {
    owned.push_back(std::make_unique<ReconTarget>(kGrid));
    targets.push_back(owned.back().get());
  }
  // Two maps per slot, so that some updates keep the stored map and some change it.
  auto map_of = [](int slot, int variant) {
    return map_with(static_cast<float>(slot * 2 + variant),
                    0.5f + 0.1f * static_cast<float>(slot) + 0.7f * static_cast<float>(variant));
  };
  for (int trial = 0; trial < 200; ++trial) {
    SCOPED_TRACE(trial);
    ScalarStore planned_store, reference;
    StoreSlots slots("test", kSlots);
    for (int batch_number = 0; batch_number < 4; ++batch_number) {
      std::vector<ProjectionUpdate> batch;
      const int length = 1 + pick(rng) * 2;
      for (int i = 0; i < length; ++i) {
        std::vector<ReconTarget*> live, accumulate;
        for (ReconTarget* t : targets) {
          const int choice = pick(rng);
          if (choice < 2) live.push_back(t);
          if (choice == 2) accumulate.push_back(t);
        }
        const int slot = pick(rng) % kSlots;
        batch.push_back(update(slot, map_of(slot, pick(rng) % 2), live, accumulate, value(rng)));
      }
      const UpdatePlan plan = plan_updates(batch, slots, 1 + static_cast<std::size_t>(pick(rng)));
      planned_store.apply_plan(plan, batch);
      reference.apply_one_by_one(batch);
      for (const ProjectionUpdate& u : batch)
        slots.store(u.slot, u.map);
    }
    for (ReconTarget* t : targets)
      EXPECT_NEAR(planned_store.targets[t], reference.targets[t], 1e-12);
  }
}

}  // namespace
}  // namespace slicestream
