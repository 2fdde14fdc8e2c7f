// SliceSet: default slices, client changes, every projection's target lists (live targets, the
// shadow's first and later sight of a slot), and shadows that equal a full recompute of the store
// once completed from it (the real CpuBackend, random already-linear data).
#include "pipeline/stages/slice_set.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream {
namespace {

constexpr int kWindow = 8;
const VolumeBox kBox{{-10, -10, -6}, {10, 10, 6}};

class SliceSetTest : public ::testing::Test {
 protected:
  SliceSetTest() : backend_(CpuBackendOptions{2, 0}), slices_(backend_) {
    backend_.begin_scan(setup_);
    slices_.begin_scan(kWindow, angular_weight(kWindow));
  }

  // Stores random data in `slot` and applies it to the given targets.
  void store(int slot, std::vector<ReconTarget*> live, std::vector<ReconTarget*> accumulate) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> values(detector_.pixels());
    for (float& v : values)
      v = uniform(rng_);
    const FrameView view{values.data(), PixelType::kFloat32, detector_};
    const ProjectionVector& vector = setup_.geometry.vectors[static_cast<std::size_t>(slot)];
    backend_.replace_projection(slot, make_projection_map(setup_.geometry.beam, vector, detector_),
                                backend_.preprocess(view, vector), live, accumulate,
                                slices_.scale());
  }

  std::vector<float> read(const ReconTarget& target) {
    std::vector<float> out(target.grid().points());
    backend_.read_target(target, out.data());
    return out;
  }

  Slice axial(std::uint32_t id) {
    Slice slice;
    slice.spec = SetSliceCommand{id, default_slices(kBox)[2], 12, 12};
    return slice;
  }

  DetectorShape detector_{10, 18};
  ScanSetup setup_ = test::linear_parallel_setup(detector_, kWindow);
  std::mt19937 rng_{99};
  CpuBackend backend_;
  SliceSet slices_;
};

TEST_F(SliceSetTest, DefaultSlicesFillFreeIdsAndGiveWayToClientSlices) {
  EXPECT_EQ(slices_.place_on_box(kBox, 16), (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(slices_.find(1)->placement, SlicePlacement::kDefault);
  EXPECT_EQ(slices_.find(2)->spec.width, 16);
  EXPECT_EQ(slices_.find(0)->spec.height, 10) << "box 20 x 12 mm: square pixels";
  slices_.set(1, axial(1));
  EXPECT_EQ(slices_.place_on_box(kBox, 20), (std::vector<std::uint32_t>{0, 2}))
      << "the client's slice 1 stays; the old defaults are replaced";
  EXPECT_EQ(slices_.find(1)->placement, SlicePlacement::kWorld);
  EXPECT_EQ(slices_.find(0)->spec.width, 20);
  EXPECT_TRUE(slices_.remove(0));
  EXPECT_FALSE(slices_.remove(0));
  EXPECT_EQ(slices_.specs().size(), 2u);
  EXPECT_EQ(slices_.place_on_box(kBox, 20), (std::vector<std::uint32_t>{2}))
      << "default 2 is placed anew; the removed default 0 stays away";
  EXPECT_EQ(slices_.find(0), nullptr);
  EXPECT_EQ(slices_.reset(), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(slices_.place_on_box(kBox, 20), (std::vector<std::uint32_t>{0, 1, 2}));
}

TEST_F(SliceSetTest, ClientSlicesAcrossBoxes) {
  SetSliceCommand box{5, SliceOrientation::from_axes({2, 0, 0}, {0, 2, 0}, {-1, -1, 0}), 8, 8,
                      /*box_coordinates=*/true};
  Slice& placed = slices_.set(5, client_slice(box, &kBox));
  EXPECT_EQ(placed.placement, SlicePlacement::kBox);
  EXPECT_EQ(placed.spec.orientation.values, default_slices(kBox)[2].values);
  EXPECT_FALSE(placed.spec.box_coordinates) << "the spec is in world mm";
  SetSliceCommand far{6, SliceOrientation::from_axes({1, 0, 0}, {0, 1, 0}, {50, 0, 0}), 4, 4};
  EXPECT_TRUE(slices_.set(6, client_slice(far, &kBox)).outside_box);
  const VolumeBox bigger{{-60, -60, -6}, {60, 60, 6}};
  slices_.place_on_box(bigger, 16);
  EXPECT_EQ(slices_.find(5)->spec.orientation.values, default_slices(bigger)[2].values);
  EXPECT_FALSE(slices_.find(6)->outside_box);
  EXPECT_EQ(slices_.find(6)->spec.orientation.values, far.orientation.values);
  const std::vector<SliceInfo> info = slices_.info();
  ASSERT_EQ(info.size(), 5u);
  EXPECT_EQ(info[3].slice_id, 5u);
  EXPECT_EQ(info[3].box_orientation.values, box.orientation.values);
}

TEST_F(SliceSetTest, TargetListsFollowTheModeAndTheShadowsCoverage) {
  Slice& slice = slices_.set(3, axial(3));
  slices_.build_targets(slice, WindowContent{5, 6, 7}, 0);
  EXPECT_EQ(slice.shows.projections_integrated, 5u);
  ProjectionUpdate sliding;
  slices_.add_targets(2, /*sliding=*/true, sliding);
  EXPECT_EQ(sliding.live, std::vector<ReconTarget*>{slice.live.get()});
  EXPECT_TRUE(sliding.accumulate.empty());

  slices_.start_shadow(slice);
  ProjectionUpdate first;
  slices_.add_targets(2, /*sliding=*/false, first);
  EXPECT_TRUE(first.live.empty()) << "per rotation: the live target waits";
  EXPECT_EQ(first.accumulate, std::vector<ReconTarget*>{slice.shadow.get()});
  EXPECT_EQ(slice.covered_count, 1u);
  ProjectionUpdate again;
  slices_.add_targets(2, /*sliding=*/false, again);
  EXPECT_EQ(again.live, std::vector<ReconTarget*>{slice.shadow.get()})
      << "a slot seen again this rotation replaces its projection in the shadow";
  EXPECT_EQ(slice.covered_count, 1u);
  EXPECT_FALSE(slices_.shadow_full(slice));
}

TEST_F(SliceSetTest, ACompletedShadowEqualsAFullRecompute) {
  for (int slot = 0; slot < kWindow; ++slot)
    store(slot, {}, {});
  Slice& slice = slices_.set(3, axial(3));
  slices_.build_targets(slice, WindowContent{}, 0);
  slices_.start_shadow(slice);
  // Part of a rotation arrives (slot 5 twice); the rest comes from the store at completion.
  for (int slot : {1, 5, 2, 5}) {
    ProjectionUpdate update;
    slices_.add_targets(slot, /*sliding=*/true, update);
    store(slot, update.live, update.accumulate);
  }
  EXPECT_FALSE(slices_.any_shadow_full());
  const ReconTarget* shadow = slice.shadow.get();
  slices_.complete_shadow(slice, 4);
  EXPECT_FALSE(slice.shadow_active);
  EXPECT_EQ(slice.live.get(), shadow) << "the shadow is the live target now";
  EXPECT_EQ(slice.rebuilt_rotation, 4u);
  auto full = backend_.create_target(slice.live->grid());
  backend_.backproject_store(slices_.all_slots(), *full, slices_.scale(), false, 0, 1);
  const std::vector<float> expected = read(*full);
  ASSERT_GT(test::max_abs(expected), 0.0);
  EXPECT_LT(test::relative_error(read(*slice.live), expected), 1e-5);
  EXPECT_LT(test::relative_error(read(*slice.shadow), expected), 1e-5)
      << "the old live target, updated in sliding mode, agrees too";
}

TEST_F(SliceSetTest, ReleasingTheScanDropsEveryTarget) {
  Slice& slice = slices_.set(3, axial(3));
  slices_.build_targets(slice, WindowContent{}, 0);
  slices_.start_shadow(slice);
  slices_.release_targets();
  EXPECT_EQ(slice.live, nullptr);
  EXPECT_EQ(slice.shadow, nullptr);
  EXPECT_FALSE(slice.shadow_active);
  EXPECT_EQ(slices_.find(3), &slice) << "the slice itself stays for the next scan";
}

}  // namespace
}  // namespace slicestream
