// The reconstruct stage's window logic through the whole pipeline: sliding-window updates and
// refreshes equal a full recompute, per-rotation publication, missed frames, explicit angles,
// the rotation-axis correction and the preview.
#include <gtest/gtest.h>

#include <random>

#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using test::call;
using test::relative_error;

// An already-linear float32 parallel scan fed with fresh random data every frame, so that every
// +new - old update changes the slices.
class WindowTest : public ::testing::Test {
 protected:
  static constexpr int kWindow = 16;

  void start(PipelineConfig config) {
    pipeline_ = std::make_unique<Pipeline>(config, test::cpu_backend(), sink_);
    pipeline_->start();
    scan_ = test::make_parallel_scan(1, {10, 24}, kWindow, PixelType::kFloat32);
    slices_ = {test::axial_slice(scan_.description, 5, 24),
               test::oblique_slice(scan_.description, 6, 20)};
    for (const SetSliceCommand& slice : slices_) {
      ASSERT_TRUE(call(*pipeline_, slice).status.ok());
    }
    ASSERT_TRUE(pipeline_->submit(ScanBegin{scan_.description, 0}));
  }

  void feed_random(std::uint32_t first, std::uint32_t count, bool skip_every_seventh = false) {
    for (std::uint32_t i = first; i < first + count; ++i) {
      if (skip_every_seventh && i % 7 == 3) continue;
      ASSERT_TRUE(pipeline_->submit(test::make_random_frame(scan_.description, i, rng_)));
    }
  }

  // The last publication of every slice equals a full recompute from the store.
  void expect_slices_equal_full_recompute(double tolerance) {
    for (const SetSliceCommand& slice : slices_)
      test::expect_last_publication_is_current(*pipeline_, sink_, slice, tolerance);
  }

  test::RecordingSink sink_;
  std::unique_ptr<Pipeline> pipeline_;
  test::TestScan scan_;
  std::vector<SetSliceCommand> slices_;
  std::mt19937 rng_{42};
};

TEST_F(WindowTest, SlidingWindowEqualsFullRecomputeAfterSeveralRotations) {
  PipelineConfig config = test::small_config();
  config.refresh_rotations = 0;     // only +new - old updates: measures their drift
  config.max_projection_batch = 1;  // one update per frame
  start(config);
  feed_random(0, 5 * kWindow + 5);
  pipeline_->wait_idle();
  expect_slices_equal_full_recompute(1e-5);
  const MetricsSnapshot m = pipeline_->metrics();
  EXPECT_EQ(m.projections_integrated, 5u * kWindow + 5);
  EXPECT_EQ(sink_.last_slice(5)->projections_integrated, 5u * kWindow + 5);
  // publish_rate_hz = 0: every frame's update of every slice was published, or replaced by a
  // newer one while the publish stage was behind (set before the scan: no publication of their
  // own). The frames come as fast as the stages take them, so the publish stage may fall behind.
  EXPECT_EQ(sink_.slices().size() + m.publications_coalesced,
            test::slice_count(*pipeline_) * (5u * kWindow + 5));
  EXPECT_TRUE(m.discards.empty());
}

TEST_F(WindowTest, PeriodicRefreshSwapsInAFullRecompute) {
  PipelineConfig config = test::small_config();
  config.refresh_rotations = 1;  // a shadow rebuild in every rotation
  start(config);
  feed_random(0, 4 * kWindow + 3);
  pipeline_->wait_idle();
  expect_slices_equal_full_recompute(1e-5);
}

TEST_F(WindowTest, MissedFramesKeepTheWindowConsistent) {
  PipelineConfig config = test::small_config();
  config.refresh_rotations = 2;
  start(config);
  feed_random(0, 5 * kWindow, /*skip_every_seventh=*/true);
  pipeline_->wait_idle();
  expect_slices_equal_full_recompute(1e-5);
}

TEST_F(WindowTest, PerRotationModePublishesOncePerRotation) {
  PipelineConfig config = test::small_config();
  config.parameters.window_mode = WindowMode::kPerRotation;
  start(config);
  for (int rotation = 0; rotation < 3; ++rotation) {
    feed_random(static_cast<std::uint32_t>(rotation * kWindow), kWindow);
    pipeline_->wait_idle();
    // The rotation is published as soon as its last slot arrives, and equals the store.
    EXPECT_EQ(sink_.slices_of(5).size(), 1u + static_cast<std::size_t>(rotation));
    expect_slices_equal_full_recompute(1e-5);
    EXPECT_EQ(sink_.last_slice(5)->projections_integrated,
              static_cast<std::uint64_t>((rotation + 1) * kWindow));
  }
  // Half a rotation: nothing new until the scan ends, which publishes the partial rotation
  // (completed from the store).
  feed_random(3 * kWindow, kWindow / 2);
  pipeline_->wait_idle();
  EXPECT_EQ(sink_.slices_of(5).size(), 3u);
  test::end_scan(*pipeline_, scan_);
  pipeline_->wait_idle();
  EXPECT_EQ(sink_.slices_of(5).size(), 4u);
  expect_slices_equal_full_recompute(1e-5);
}

TEST_F(WindowTest, PerRotationModeCompletesRotationsWithMissedFramesFromTheStore) {
  PipelineConfig config = test::small_config();
  config.parameters.window_mode = WindowMode::kPerRotation;
  start(config);
  feed_random(0, kWindow);
  // Rotation 1 misses two frames; rotation 2's first frame completes it.
  for (std::uint32_t i = kWindow; i < 2 * kWindow; ++i) {
    if (i == kWindow + 3 || i == 2 * kWindow - 1) continue;
    ASSERT_TRUE(pipeline_->submit(test::make_random_frame(scan_.description, i, rng_)));
  }
  pipeline_->wait_idle();
  EXPECT_EQ(sink_.slices_of(5).size(), 1u);
  const CommandReply before = call(
      *pipeline_, GetSliceCommand{slices_[0].orientation, slices_[0].width, slices_[0].height});
  feed_random(2 * kWindow, 1);
  pipeline_->wait_idle();
  ASSERT_EQ(sink_.slices_of(5).size(), 2u);
  EXPECT_LT(relative_error(sink_.last_slice(5)->values, before.slice->values), 1e-5);
}

TEST_F(WindowTest, SwitchingModesKeepsSlicesConsistent) {
  start(test::small_config());
  feed_random(0, kWindow + 4);
  SetParametersCommand per_rotation;
  per_rotation.window_mode = WindowMode::kPerRotation;
  ASSERT_TRUE(call(*pipeline_, per_rotation).status.ok());
  feed_random(kWindow + 4, kWindow + 3);
  SetParametersCommand sliding;
  sliding.window_mode = WindowMode::kSlidingWindow;
  ASSERT_TRUE(call(*pipeline_, sliding).status.ok());
  feed_random(2 * kWindow + 7, 5);
  pipeline_->wait_idle();
  expect_slices_equal_full_recompute(1e-5);
}

TEST_F(WindowTest, RotationAxisOffsetRecomputesWithTheShiftedGeometry) {
  start(test::small_config());
  feed_random(0, 2 * kWindow);
  pipeline_->wait_idle();
  const std::vector<float> centred = sink_.last_slice(5)->values.to_vector();
  SetParametersCommand shift;
  shift.rotation_axis_offset_px = 1.5;
  const CommandReply reply = call(*pipeline_, shift);
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  ASSERT_TRUE(reply.parameters.has_value());
  EXPECT_DOUBLE_EQ(reply.parameters->rotation_axis_offset_px, 1.5);
  pipeline_->wait_idle();
  // Published at once, different from before, and consistent with further frames.
  EXPECT_GT(relative_error(sink_.last_slice(5)->values, centred), 0.05);
  expect_slices_equal_full_recompute(1e-5);
  feed_random(2 * kWindow, kWindow + 2);
  pipeline_->wait_idle();
  expect_slices_equal_full_recompute(1e-5);
}

TEST(WindowAngles, ExplicitAnglesKeepTheLastNFrames) {
  test::RecordingSink sink;
  PipelineConfig config = test::small_config();
  config.refresh_rotations = 0;
  Pipeline pipeline(config, test::cpu_backend(), sink);
  pipeline.start();
  constexpr int kWindow = 12;
  test::TestScan scan = test::make_parallel_scan(3, {8, 20}, kWindow, PixelType::kFloat32);
  const SetSliceCommand slice = test::axial_slice(scan.description, 0, 20);
  ASSERT_TRUE(call(pipeline, slice).status.ok());
  ASSERT_TRUE(pipeline.submit(ScanBegin{scan.description, 0}));
  std::mt19937 rng(7);
  // Angles that drift with every rotation: every slot's map changes (BP(new) - BP_old(old)).
  for (std::uint32_t i = 0; i < 4 * kWindow; ++i) {
    RawFrame frame = test::make_random_frame(scan.description, i, rng);
    frame.angle_rad = M_PI * (i % kWindow) / kWindow + 0.01 * (i / kWindow);
    ASSERT_TRUE(pipeline.submit(std::move(frame)));
  }
  pipeline.wait_idle();
  const CommandReply full = call(pipeline, GetSliceCommand{slice.orientation, 20, 20});
  ASSERT_TRUE(full.slice.has_value());
  EXPECT_LT(relative_error(sink.last_slice(0)->values, full.slice->values), 1e-5);
  EXPECT_EQ(pipeline.metrics().projections_integrated, 4u * kWindow);
}

TEST(Preview, PublishesTheVolumeFromTheStore) {
  test::RecordingSink sink;
  PipelineConfig config = test::small_config();
  config.preview_size = 12;
  config.parameters.preview_interval_s = 0;
  Pipeline pipeline(config, test::cpu_backend(), sink);
  pipeline.start();
  test::TestScan scan = test::make_parallel_scan(4, {12, 24}, 16, PixelType::kFloat32);
  ASSERT_TRUE(pipeline.submit(ScanBegin{scan.description, 0}));
  std::mt19937 rng(9);
  for (std::uint32_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(pipeline.submit(test::make_random_frame(scan.description, i, rng)));
  }
  test::end_scan(pipeline, scan);
  pipeline.wait_idle();
  // The last preview covers all 20 frames (forced at scan end).
  ASSERT_TRUE(sink.wait_for(
      [&] {
        const auto previews = sink.previews();
        return !previews.empty() && previews.back().projections_integrated == 20;
      },
      10s));
  const PreviewVolume preview = sink.previews().back();
  ASSERT_EQ(preview.values.size(), 12u * 12 * 12);
  EXPECT_EQ(preview.scan_id, 4u);
  // Plane k equals the axial slice through its voxel centres.
  const Vec3 e = scan.description.volume.extent();
  const Vec3 min = scan.description.volume.min_mm;
  for (int k : {0, 5, 11}) {
    const Vec3 base{min.x, min.y, min.z + (k + 0.5) / 12.0 * e.z};
    const SliceOrientation plane = SliceOrientation::from_axes({e.x, 0, 0}, {0, e.y, 0}, base);
    const CommandReply slice = call(pipeline, GetSliceCommand{plane, 12, 12});
    ASSERT_TRUE(slice.slice.has_value());
    const std::vector<float> values(preview.values.begin() + k * 144,
                                    preview.values.begin() + (k + 1) * 144);
    EXPECT_LT(relative_error(values, slice.slice->values), 1e-5) << "plane " << k;
  }
  EXPECT_GE(pipeline.metrics().previews_published, 1u);
}

}  // namespace
}  // namespace slicestream
