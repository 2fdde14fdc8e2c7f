// CpuBackend bookkeeping: the store, +new - old updates with equal and different maps, the
// accumulate list, slot maps, plane ranges, memory limits and error reporting.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream {
namespace {

using test::relative_error;

// An already-linear float32 parallel scan (test::linear_parallel_setup): the tests place
// arbitrary data in the store.
struct Fixture {
  DetectorShape detector{12, 20};
  int slots = 9;
  ScanSetup setup = test::linear_parallel_setup(detector, slots);
  std::mt19937 rng{1234};
  std::unique_ptr<CpuBackend> backend;

  explicit Fixture(std::size_t memory_limit = 0)
      : backend(std::make_unique<CpuBackend>(CpuBackendOptions{2, memory_limit})) {}

  std::vector<float> random_values() {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> v(detector.pixels());
    for (float& x : v)
      x = uniform(rng);
    return v;
  }

  std::unique_ptr<ProjectionBuffer> projection(const std::vector<float>& values, int slot) {
    const FrameView view{values.data(), PixelType::kFloat32, detector};
    return backend->preprocess(view, setup.geometry.vectors[static_cast<std::size_t>(slot)]);
  }

  ProjectionMap map(int slot, double offset_px = 0) const {
    return make_projection_maps(
        with_rotation_axis_offset(setup.geometry, offset_px))[static_cast<std::size_t>(slot)];
  }

  std::vector<float> read(const ReconTarget& target) {
    std::vector<float> out(target.grid().points());
    backend->read_target(target, out.data());
    return out;
  }

  std::vector<int> all_slots() const {
    std::vector<int> s(static_cast<std::size_t>(slots));
    std::iota(s.begin(), s.end(), 0);
    return s;
  }

  GridSpec slice() const {
    const VolumeBox box{{-10, -10, -6}, {10, 10, 6}};
    return slice_grid(default_slices(box)[2], 16, 16);
  }
};

// Three rotations of fresh data into a live target, every slot replaced twice; the maps move by
// `offset_px_per_rotation` every rotation. Returns the live target and a full recompute.
std::pair<std::vector<float>, std::vector<float>> three_rotations(double offset_px_per_rotation) {
  Fixture f;
  f.backend->begin_scan(f.setup);
  auto live = f.backend->create_target(f.slice());
  const float scale = angular_weight(f.slots);
  for (int rotation = 0; rotation < 3; ++rotation) {
    for (int slot = 0; slot < f.slots; ++slot) {
      f.backend->replace_projection(slot, f.map(slot, offset_px_per_rotation * rotation),
                                    f.projection(f.random_values(), slot), {live.get()}, {}, scale);
    }
  }
  auto full = f.backend->create_target(f.slice());
  f.backend->backproject_store(f.all_slots(), *full, scale, false, 0, 1);
  return {f.read(*live), f.read(*full)};
}

TEST(CpuBackend, SlidingUpdatesEqualFullRecomputeWithEqualMaps) {
  // The same map every rotation: the difference new - old is backprojected once.
  const auto [live, reference] = three_rotations(0);
  ASSERT_GT(test::max_abs(reference), 0.1);
  EXPECT_LT(relative_error(live, reference), 1e-5);
}

TEST(CpuBackend, SlidingUpdatesEqualFullRecomputeWithChangingMaps) {
  // The map of a slot changes every rotation (explicit angles): BP(new) - BP_old_map(old).
  const auto [live, reference] = three_rotations(0.7);
  EXPECT_LT(relative_error(live, reference), 1e-5);
}

TEST(CpuBackend, AccumulateTargetsReceiveOnlyTheNewProjection) {
  Fixture f;
  f.backend->begin_scan(f.setup);
  const float scale = angular_weight(f.slots);
  auto ignored = f.backend->create_target(f.slice());
  for (int slot = 0; slot < f.slots; ++slot) {  // fill the store
    f.backend->replace_projection(slot, f.map(slot), f.projection(f.random_values(), slot),
                                  {ignored.get()}, {}, scale);
  }
  auto shadow = f.backend->create_target(f.slice());
  f.backend->replace_projection(4, f.map(4), f.projection(f.random_values(), 4), {}, {shadow.get()},
                                scale);
  auto expected = f.backend->create_target(f.slice());
  f.backend->backproject_store({4}, *expected, scale, false, 0, 1);
  EXPECT_LT(relative_error(f.read(*shadow), f.read(*expected)), 1e-6);
}

TEST(CpuBackend, SetSlotMapsChangesLaterBackprojections) {
  Fixture f;
  f.backend->begin_scan(f.setup);
  const float scale = angular_weight(f.slots);
  std::vector<std::vector<float>> data;
  for (int slot = 0; slot < f.slots; ++slot) {
    data.push_back(f.random_values());
    f.backend->replace_projection(slot, f.map(slot), f.projection(data.back(), slot), {}, {},
                                  scale);
  }
  std::vector<ProjectionMap> shifted;
  for (int slot = 0; slot < f.slots; ++slot)
    shifted.push_back(f.map(slot, 1.5));
  f.backend->set_slot_maps(shifted);
  auto after = f.backend->create_target(f.slice());
  f.backend->backproject_store(f.all_slots(), *after, scale, false, 0, 1);

  // The same data stored with the shifted maps from the start.
  Fixture g;
  g.backend->begin_scan(g.setup);
  for (int slot = 0; slot < g.slots; ++slot) {
    g.backend->replace_projection(slot, g.map(slot, 1.5),
                                  g.projection(data[static_cast<std::size_t>(slot)], slot), {}, {},
                                  scale);
  }
  auto expected = g.backend->create_target(g.slice());
  g.backend->backproject_store(g.all_slots(), *expected, scale, false, 0, 1);
  EXPECT_LT(relative_error(f.read(*after), g.read(*expected)), 1e-6);
  EXPECT_THROW(f.backend->set_slot_maps({shifted[0]}), BackendError);
}

TEST(CpuBackend, PlaneRangesAndAccumulateComposeToTheWholeVolume) {
  Fixture f;
  f.backend->begin_scan(f.setup);
  const float scale = angular_weight(f.slots);
  for (int slot = 0; slot < f.slots; ++slot) {
    f.backend->replace_projection(slot, f.map(slot), f.projection(f.random_values(), slot), {}, {},
                                  scale);
  }
  const GridSpec grid = volume_grid({{-10, -10, -6}, {10, 10, 6}}, 10, 10, 6);
  auto whole = f.backend->create_target(grid);
  f.backend->backproject_store(f.all_slots(), *whole, scale, false, 0, 6);
  // Built in pieces: planes [0, 2) and [2, 6), each from two slot chunks.
  auto pieces = f.backend->create_target(grid);
  const std::vector<int> first{0, 1, 2, 3};
  const std::vector<int> second{4, 5, 6, 7, 8};
  for (auto [begin, end] : {std::pair{0, 2}, std::pair{2, 6}}) {
    f.backend->backproject_store(first, *pieces, scale, false, begin, end);
    f.backend->backproject_store(second, *pieces, scale, true, begin, end);
  }
  EXPECT_LT(relative_error(f.read(*pieces), f.read(*whole)), 1e-6);
  EXPECT_THROW(f.backend->backproject_store(first, *pieces, scale, false, 3, 7), BackendError);
  EXPECT_THROW(f.backend->backproject_store({9}, *pieces, scale, false, 0, 1), BackendError);
}

TEST(CpuBackend, ReportsMemoryUseAndRefusesScansOverTheLimit) {
  Fixture roomy;
  roomy.backend->begin_scan(roomy.setup);
  const std::size_t frame = roomy.detector.pixels() * sizeof(float);
  EXPECT_EQ(roomy.backend->info().memory_used_by_scan_bytes,
            (static_cast<std::size_t>(roomy.slots) + 4 + 2) * frame);
  EXPECT_EQ(roomy.backend->info().name, "cpu");
  EXPECT_EQ(roomy.backend->info().threads, 2);

  Fixture tight(3 * frame);
  try {
    tight.backend->begin_scan(tight.setup);
    FAIL() << "a scan over the memory limit was accepted";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
  }
  Fixture small((static_cast<std::size_t>(roomy.slots) + 6) * frame + 1024);
  small.backend->begin_scan(small.setup);
  EXPECT_THROW(small.backend->create_target(volume_grid({{-1, -1, -1}, {1, 1, 1}}, 64, 64, 64)),
               BackendError);
  auto fits = small.backend->create_target(small.slice());  // 1 KiB fits
  EXPECT_NE(fits, nullptr);
}

// The same updates one by one and as batches (repeated slots, changing maps, live and
// accumulate targets, a target in both lists) give the same targets and the same store.
TEST(CpuBackend, BatchedUpdatesEqualOneByOne) {
  Fixture one;
  Fixture batch;
  const float scale = angular_weight(one.slots);
  for (Fixture* f : {&one, &batch})
    f->backend->begin_scan(f->setup);
  const GridSpec other_grid =
      slice_grid(default_slices(VolumeBox{{-10, -10, -6}, {10, 10, 6}})[0], 13, 11);
  std::unique_ptr<ReconTarget> live[2][2];
  std::unique_ptr<ReconTarget> shadow[2];
  Fixture* fixtures[2] = {&one, &batch};
  for (int b = 0; b < 2; ++b) {
    live[b][0] = fixtures[b]->backend->create_target(one.slice());
    live[b][1] = fixtures[b]->backend->create_target(other_grid);
    shadow[b] = fixtures[b]->backend->create_target(one.slice());
  }
  // Slots of 5 batches: a repeated slot inside a batch, the map of a slot changing.
  const std::vector<std::vector<int>> batches = {
      {0, 1, 2, 3, 4, 5, 6, 7, 8}, {2, 5, 2, 7}, {1}, {8, 0, 8, 8, 3, 4}, {6, 7, 6}};
  int update = 0;
  for (const std::vector<int>& slots : batches) {
    std::vector<ProjectionUpdate> updates;
    for (int slot : slots) {
      const std::vector<float> values = one.random_values();
      const double offset = (update % 3 == 2) ? 0.6 * update : 0.0;  // some maps change
      for (int b = 0; b < 2; ++b) {
        ProjectionUpdate u;
        u.slot = slot;
        u.map = fixtures[b]->map(slot, offset);
        u.projection = fixtures[b]->projection(values, slot);
        u.live = {live[b][0].get(), live[b][1].get()};
        // The shadow: accumulated on even updates, live (+new - old) on odd ones, and both lists
        // at once on every fifth.
        if (update % 2 == 0) u.accumulate = {shadow[b].get()};
        if (update % 2 == 1 || update % 5 == 0) u.live.push_back(shadow[b].get());
        if (b == 0) {
          fixtures[b]->backend->replace_projection(u.slot, u.map, std::move(u.projection), u.live,
                                                   u.accumulate, scale);
        } else {
          updates.push_back(std::move(u));
        }
      }
      ++update;
    }
    batch.backend->replace_projections(updates, scale);
    for (const ProjectionUpdate& u : updates) {
      EXPECT_TRUE(u.applied);
      EXPECT_EQ(u.projection, nullptr);
    }
  }
  for (int t = 0; t < 2; ++t) {
    const std::vector<float> expected = one.read(*live[0][t]);
    ASSERT_GT(test::max_abs(expected), 0.1);
    EXPECT_LT(relative_error(batch.read(*live[1][t]), expected), 1e-5) << "live target " << t;
  }
  EXPECT_LT(relative_error(batch.read(*shadow[1]), one.read(*shadow[0])), 1e-5) << "shadow";
  auto full_one = one.backend->create_target(one.slice());
  auto full_batch = batch.backend->create_target(batch.slice());
  one.backend->backproject_store(one.all_slots(), *full_one, scale, false, 0, 1);
  batch.backend->backproject_store(batch.all_slots(), *full_batch, scale, false, 0, 1);
  EXPECT_LT(relative_error(batch.read(*full_batch), one.read(*full_one)), 1e-6) << "store";
  // Incremental = full recompute after the batches too.
  EXPECT_LT(relative_error(batch.read(*live[1][0]), batch.read(*full_batch)), 1e-5);
}

// A batch that fails part-way: runs before the failure took effect, the rest is untouched.
TEST(CpuBackend, AFailedBatchReportsWhatTookEffect) {
  Fixture f;
  f.backend->begin_scan(f.setup);
  const float scale = angular_weight(f.slots);
  auto live = f.backend->create_target(f.slice());
  std::vector<ProjectionUpdate> updates(4);
  const int slots[4] = {0, 1, 0, 99};  // the repeated slot starts a second run; 99 is invalid
  for (int i = 0; i < 4; ++i) {
    updates[static_cast<std::size_t>(i)].slot = slots[i];
    updates[static_cast<std::size_t>(i)].map = f.map(slots[i] % f.slots);
    updates[static_cast<std::size_t>(i)].projection = f.projection(f.random_values(), 0);
    updates[static_cast<std::size_t>(i)].live = {live.get()};
  }
  EXPECT_THROW(f.backend->replace_projections(updates, scale), BackendError);
  EXPECT_TRUE(updates[0].applied);
  EXPECT_TRUE(updates[1].applied);
  for (std::size_t i = 2; i < 4; ++i) {
    EXPECT_FALSE(updates[i].applied);
    EXPECT_NE(updates[i].projection, nullptr) << "update " << i << " was not attempted";
  }
  // The first run is in the store and in the live target.
  auto full = f.backend->create_target(f.slice());
  f.backend->backproject_store(f.all_slots(), *full, scale, false, 0, 1);
  EXPECT_LT(relative_error(f.read(*live), f.read(*full)), 1e-5);
}

TEST(CpuBackend, RejectsMisuseWithBackendErrors) {
  Fixture f;
  const std::vector<float> values = f.random_values();
  const FrameView view{values.data(), PixelType::kFloat32, f.detector};
  EXPECT_THROW(f.backend->preprocess(view, f.setup.geometry.vectors[0]), BackendError);
  f.backend->begin_scan(f.setup);
  const FrameView wrong{values.data(), PixelType::kFloat32,
                        DetectorShape{f.detector.cols, f.detector.rows}};
  EXPECT_THROW(f.backend->preprocess(wrong, f.setup.geometry.vectors[0]), BackendError);
  EXPECT_THROW(f.backend->replace_projection(f.slots, f.map(0), f.projection(values, 0), {}, {}, 1),
               BackendError);
  EXPECT_THROW(f.backend->set_calibration(std::vector<float>(3), {}), BackendError);
  EXPECT_THROW(f.backend->create_target(GridSpec{}), BackendError);
}

}  // namespace
}  // namespace slicestream
