// Latest-wins publication through the whole pipeline: a publish stage that keeps up gets every
// update of every slice; one held back gets fewer, the updates it missed are counted as coalesced,
// the reconstruct stage is not held up, and once it is free again the last image of every slice
// is the slice's current state, without any further frame.
#include <gtest/gtest.h>

#include <random>

#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using test::call;

class PublicationTest : public ::testing::Test {
 protected:
  static constexpr int kWindow = 16;

  void start() {
    pipeline_ =
        std::make_unique<Pipeline>(test::one_update_per_frame_config(), test::cpu_backend(), sink_);
    pipeline_->start();
    test::TwoSliceScan s = test::begin_two_slice_scan(*pipeline_, kWindow);
    scan_ = std::move(s.scan);
    slices_ = std::move(s.slices);
  }

  void feed(std::uint32_t index) {
    ASSERT_TRUE(pipeline_->submit(test::make_random_frame(scan_.description, index, rng_)));
  }

  // Every slice's publications carry sequence numbers 1, 2, ... without a gap (increasing only,
  // where a moved slice's image overtook images of its old place: `gapless` false), and its
  // last one shows `integrated` projections and equals a full recompute from the store.
  void expect_latest_state_published(std::uint64_t integrated, bool gapless = true) {
    for (const SetSliceCommand& slice : slices_) {
      const std::vector<SliceImage> published = sink_.slices_of(slice.slice_id);
      ASSERT_FALSE(published.empty());
      for (std::size_t k = 0; k < published.size(); ++k) {
        if (gapless) {
          EXPECT_EQ(published[k].sequence, k + 1) << "slice " << slice.slice_id;
        }
        if (k > 0) {
          EXPECT_GT(published[k].sequence, published[k - 1].sequence);
        }
      }
      EXPECT_EQ(published.back().projections_integrated, integrated);
      test::expect_last_publication_is_current(*pipeline_, sink_, slice, 1e-6);
    }
  }

  test::RecordingSink sink_;
  std::unique_ptr<Pipeline> pipeline_;
  test::TestScan scan_;
  std::vector<SetSliceCommand> slices_;
  std::mt19937 rng_{11};
};

TEST_F(PublicationTest, APublishStageThatKeepsUpGetsEveryUpdate) {
  start();
  constexpr std::uint32_t kFrames = 2 * kWindow;
  for (std::uint32_t i = 0; i < kFrames; ++i) {
    feed(i);
    pipeline_->wait_idle();  // the publish stage has taken everything before the next frame
  }
  for (const SetSliceCommand& slice : slices_) {
    const std::vector<SliceImage> published = sink_.slices_of(slice.slice_id);
    ASSERT_EQ(published.size(), kFrames) << "slice " << slice.slice_id;
    for (std::uint32_t k = 0; k < kFrames; ++k)
      EXPECT_EQ(published[k].projections_integrated, k + 1u);
  }
  EXPECT_EQ(pipeline_->metrics().publications_coalesced, 0u);
  expect_latest_state_published(kFrames);
}

TEST_F(PublicationTest, APublishStageHeldBackGetsTheLatestStateOnceFreeWithoutAnotherFrame) {
  start();
  sink_.block();  // the publish stage stops in the sink at its first slice
  constexpr std::uint32_t kFrames = 3 * kWindow;
  for (std::uint32_t i = 0; i < kFrames; ++i)
    feed(i);
  // The reconstruct stage is not held up: every frame is integrated while nothing goes out.
  ASSERT_TRUE(
      sink_.wait_for([&] { return pipeline_->metrics().projections_integrated == kFrames; }, 20s));
  EXPECT_TRUE(sink_.slices().empty());
  const std::uint64_t coalesced = pipeline_->metrics().publications_coalesced;
  EXPECT_GT(coalesced, 0u) << "the updates the publish stage could not take are counted";
  const CommandReply status = call(*pipeline_, GetStatusCommand{});
  ASSERT_TRUE(status.report.has_value());
  EXPECT_GT(status.report->metrics.publications_coalesced, 0u) << "reported in the status";

  sink_.release();  // no frame follows
  const auto latest_out = [&] {
    for (const SetSliceCommand& slice : slices_) {
      const std::optional<SliceImage> last = sink_.last_slice(slice.slice_id);
      if (!last || last->projections_integrated != kFrames) return false;
    }
    return true;
  };
  ASSERT_TRUE(sink_.wait_for(latest_out, 20s)) << "the slices' latest state never went out";
  pipeline_->wait_idle();
  const MetricsSnapshot m = pipeline_->metrics();
  // The client's two slices and the default slices placed in the free ids.
  const std::size_t slices = test::slice_count(*pipeline_);
  EXPECT_LT(sink_.slices().size(), slices * kFrames)
      << "thinned while the publish stage was behind";
  // Every update of every slice was published or replaced by a newer one: none lost.
  EXPECT_EQ(sink_.slices().size() + m.publications_coalesced, slices * kFrames);
  EXPECT_EQ(m.slices_published, sink_.slices().size());
  expect_latest_state_published(kFrames);
}

TEST_F(PublicationTest, ASliceSetWhileThePublishStageIsHeldBackGoesOutWithItsLatestState) {
  start();
  for (std::uint32_t i = 0; i < kWindow; ++i)
    feed(i);
  pipeline_->wait_idle();
  sink_.block();
  for (std::uint32_t i = kWindow; i < 2 * kWindow; ++i)
    feed(i);
  ASSERT_TRUE(sink_.wait_for(
      [&] { return pipeline_->metrics().projections_integrated == 2u * kWindow; }, 20s));
  // The scan goes idle; a viewer moves a slice (forced publication) while updates are held back.
  slices_[0] = test::axial_slice_at(5, 24, 0.5, 1.0, -0.5, 0.0, 0.3);
  ASSERT_TRUE(call(*pipeline_, slices_[0]).status.ok());
  sink_.release();
  pipeline_->wait_idle();
  EXPECT_EQ(sink_.slices().size() + pipeline_->metrics().publications_coalesced,
            test::slice_count(*pipeline_) * 2 * kWindow + 1)
      << "every update published or coalesced, and the moved slice's own publication";
  expect_latest_state_published(2u * kWindow, /*gapless=*/false);
}

TEST_F(PublicationTest, AMovedSliceOvertakesTheBacklogAndItsOldPlaceIsNotShownAfterIt) {
  start();
  for (std::uint32_t i = 0; i < kWindow; ++i)
    feed(i);
  pipeline_->wait_idle();
  const std::size_t before = sink_.slices().size();
  sink_.block();  // the publish stage stops in the sink; routine updates queue behind it
  for (std::uint32_t i = kWindow; i < 2 * kWindow; ++i)
    feed(i);
  ASSERT_TRUE(sink_.wait_for(
      [&] { return pipeline_->metrics().projections_integrated == 2u * kWindow; }, 20s));
  const SetSliceCommand old_place = slices_[1];
  slices_[1] = test::axial_slice_at(6, 20, 0.5, 0.25, 0.1, -0.2, 0.4);
  ASSERT_TRUE(call(*pipeline_, slices_[1]).status.ok());
  sink_.release();
  pipeline_->wait_idle();

  const std::vector<SliceImage> all = sink_.slices();
  ASSERT_GT(all.size(), before + 1);
  // The image the sink held when blocked, then at once the moved slice, ahead of the routine
  // updates of every slice queued before the move.
  const SliceImage& first_after = all[before + 1];
  EXPECT_EQ(first_after.slice_id, slices_[1].slice_id);
  EXPECT_TRUE(first_after.moved);
  EXPECT_EQ(first_after.orientation.values, slices_[1].orientation.values);
  std::size_t routine_after_move = 0;
  for (std::size_t k = before + 2; k < all.size(); ++k) {
    EXPECT_FALSE(all[k].moved);
    if (all[k].slice_id != slices_[1].slice_id) {
      ++routine_after_move;
      continue;
    }
    EXPECT_NE(all[k].orientation.values, old_place.orientation.values)
        << "the slice's old place shown after its new one";
  }
  EXPECT_GT(routine_after_move, 0u) << "no backlog overtaken: the test shows nothing";
  const MetricsSnapshot m = pipeline_->metrics();
  EXPECT_EQ(all.size() + m.publications_coalesced, test::slice_count(*pipeline_) * 2 * kWindow + 1)
      << "every update published or coalesced (the old place's too), and the moved image";
  EXPECT_EQ(m.slices_published, all.size());
  expect_latest_state_published(2u * kWindow, /*gapless=*/false);
}

}  // namespace
}  // namespace slicestream
