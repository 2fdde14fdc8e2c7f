// The slice set across scans: the default slices 0-2 follow every scan's box (whatever a client
// set or removed elsewhere) with square pixels; a client's slice in world mm stays where it is and
// is reported when it misses a new box; one in box coordinates follows the box; a removed default
// stays removed until ResetSlices brings the defaults back.
#include <gtest/gtest.h>

#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using test::call;

class SlicesAcrossScansTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PipelineConfig config = test::small_config();
    config.default_slice_size = 20;
    config.max_projection_batch = 1;
    pipeline_ = std::make_unique<Pipeline>(config, test::cpu_backend(), sink_);
    pipeline_->start();
  }

  // A scan whose box differs from the first one's: other detector height, other pixel size.
  void run_scan(const test::TestScan& scan) {
    test::begin_scan(*pipeline_, scan);
    test::feed_phantom(*pipeline_, scan, 0, 4);
    pipeline_->wait_idle();
  }

  StatusReport status() {
    const CommandReply reply = call(*pipeline_, GetStatusCommand{});
    EXPECT_TRUE(reply.report.has_value());
    return reply.report.value_or(StatusReport{});
  }

  // The status of slice `id` (a failure when there is none).
  SliceInfo info_of(const StatusReport& report, std::uint32_t id) {
    for (const SliceInfo& info : report.slice_info) {
      if (info.slice_id == id) return info;
    }
    ADD_FAILURE() << "no slice " << id << " in the status";
    return SliceInfo{};
  }

  test::RecordingSink sink_;
  std::unique_ptr<Pipeline> pipeline_;
  test::TestScan first_ = test::make_parallel_scan(1, {12, 32}, 24);
  // Four times taller than wide, other pixel size: another box.
  test::TestScan second_ = test::make_parallel_scan(2, {64, 16}, 24, PixelType::kUint16, 2, 2, 0.5);
};

// The published slice `id` of scan `scan_id` (the last one).
std::optional<SliceImage> last_of_scan(const test::RecordingSink& sink, std::uint32_t id,
                                       std::uint64_t scan_id) {
  std::optional<SliceImage> found;
  for (const SliceImage& image : sink.slices_of(id)) {
    if (image.scan_id == scan_id) found = image;
  }
  return found;
}

TEST_F(SlicesAcrossScansTest, DefaultSlicesFollowANewBoxAfterAClientSetAnotherSlice) {
  run_scan(first_);
  ASSERT_TRUE(call(*pipeline_, test::oblique_slice(first_.description, 9, 8)).status.ok());
  run_scan(second_);
  const std::array<SliceOrientation, 3> expected = default_slices(second_.description.volume);
  for (std::uint32_t id = 0; id < 3; ++id) {
    const std::optional<SliceImage> slice = last_of_scan(sink_, id, 2);
    ASSERT_TRUE(slice.has_value()) << "default slice " << id << " not published in scan 2";
    EXPECT_EQ(slice->orientation.values, expected[id].values)
        << "default slice " << id << " kept the first scan's box";
  }
  const StatusReport report = status();
  EXPECT_EQ(info_of(report, 0).placement, SlicePlacement::kDefault);
  EXPECT_EQ(info_of(report, 9).placement, SlicePlacement::kWorld);
}

TEST_F(SlicesAcrossScansTest, DefaultSlicesFollowANewBoxAfterAClientRemovedAnotherSlice) {
  ASSERT_TRUE(call(*pipeline_, test::oblique_slice(first_.description, 9, 8)).status.ok());
  run_scan(first_);
  ASSERT_TRUE(call(*pipeline_, RemoveSliceCommand{9}).status.ok());
  run_scan(second_);
  const std::array<SliceOrientation, 3> expected = default_slices(second_.description.volume);
  for (std::uint32_t id = 0; id < 3; ++id) {
    const std::optional<SliceImage> slice = last_of_scan(sink_, id, 2);
    ASSERT_TRUE(slice.has_value()) << id;
    EXPECT_EQ(slice->orientation.values, expected[id].values) << id;
  }
}

TEST_F(SlicesAcrossScansTest, DefaultVerticalSlicesHaveSquarePixels) {
  run_scan(second_);  // box 8 x 8 x 32 mm: vertical slices four times taller than wide
  const Vec3 extent = second_.description.volume.extent();
  for (std::uint32_t id = 0; id < 3; ++id) {
    const std::optional<SliceImage> slice = last_of_scan(sink_, id, 2);
    ASSERT_TRUE(slice.has_value()) << id;
    const double pixel_x = norm(slice->orientation.x_axis()) / slice->width;
    const double pixel_y = norm(slice->orientation.y_axis()) / slice->height;
    EXPECT_NEAR(pixel_x / pixel_y, 1.0, 0.05)
        << "slice " << id << ": " << slice->width << " x " << slice->height;
    EXPECT_EQ(std::max(slice->width, slice->height), 20) << "the longer side has --slice-size";
  }
  EXPECT_DOUBLE_EQ(extent.z, 4 * extent.x);
  EXPECT_EQ(last_of_scan(sink_, 0, 2)->width, 5);
  EXPECT_EQ(last_of_scan(sink_, 0, 2)->height, 20);
}

TEST_F(SlicesAcrossScansTest, RemovedDefaultStaysRemovedUntilReset) {
  run_scan(first_);
  ASSERT_TRUE(call(*pipeline_, RemoveSliceCommand{1}).status.ok());
  ASSERT_TRUE(call(*pipeline_, test::oblique_slice(first_.description, 7, 8)).status.ok());
  run_scan(second_);
  EXPECT_FALSE(last_of_scan(sink_, 1, 2).has_value()) << "a removed default came back";
  EXPECT_TRUE(last_of_scan(sink_, 0, 2).has_value());

  const CommandReply reset = call(*pipeline_, ResetSlicesCommand{});
  ASSERT_TRUE(reset.status.ok()) << reset.status.message;
  EXPECT_NE(reset.status.message.find("7"), std::string::npos) << reset.status.message;
  pipeline_->wait_idle();
  const StatusReport report = status();
  ASSERT_EQ(report.slices.size(), 3u) << "the defaults, and nothing else";
  const std::array<SliceOrientation, 3> expected = default_slices(second_.description.volume);
  for (std::uint32_t id = 0; id < 3; ++id) {
    EXPECT_EQ(report.slices[id].slice_id, id);
    EXPECT_EQ(report.slices[id].orientation.values, expected[id].values);
  }
  EXPECT_TRUE(last_of_scan(sink_, 1, 2).has_value()) << "reset places the defaults at once";
}

TEST_F(SlicesAcrossScansTest, DefaultsRemovedBeforeAnyScanAreNeverPlaced) {
  for (std::uint32_t id = 0; id < kDefaultSliceCount; ++id)
    EXPECT_TRUE(call(*pipeline_, RemoveSliceCommand{id}).status.ok()) << id;
  EXPECT_EQ(call(*pipeline_, RemoveSliceCommand{0}).status.code, StatusCode::kNotFound)
      << "removed already";
  ASSERT_TRUE(call(*pipeline_, test::axial_slice(first_.description, 9, 8)).status.ok());
  run_scan(first_);
  EXPECT_EQ(status().slices.size(), 1u);
  EXPECT_TRUE(sink_.slices_of(0).empty());
}

TEST_F(SlicesAcrossScansTest, WorldSliceOutsideANewBoxIsReported) {
  run_scan(first_);
  // Near the first box's corner: outside the second, narrower box.
  const SetSliceCommand corner = test::axial_slice_at(5, 8, 0.5, 14, 14, 0);
  ASSERT_TRUE(call(*pipeline_, corner).status.ok());
  EXPECT_FALSE(info_of(status(), 5).outside_box);
  run_scan(second_);
  const StatusReport report = status();
  EXPECT_TRUE(info_of(report, 5).outside_box);
  EXPECT_EQ(sink_.events_with_reason("slice_outside_box"), 1u);
  EXPECT_EQ(report.slices[3].orientation.values, corner.orientation.values)
      << "a world slice stays where it is";
}

TEST_F(SlicesAcrossScansTest, BoxCoordinateSliceFollowsTheBox) {
  // The axial slice through the box centre in RECAST3D's normalised coordinates, set before any
  // scan, then placed on each scan's box.
  SetSliceCommand box;
  box.slice_id = 4;
  box.orientation = SliceOrientation::from_axes({2, 0, 0}, {0, 2, 0}, {-1, -1, 0.5});
  box.width = 8;
  box.height = 8;
  box.box_coordinates = true;
  ASSERT_TRUE(call(*pipeline_, box).status.ok());
  for (const test::TestScan* scan : {&first_, &second_}) {
    run_scan(*scan);
    const std::optional<SliceImage> slice = last_of_scan(sink_, 4, scan->description.scan_id);
    ASSERT_TRUE(slice.has_value());
    EXPECT_EQ(slice->orientation.values,
              from_normalized(box.orientation, scan->description.volume).values);
  }
  const SliceInfo info = info_of(status(), 4);
  EXPECT_EQ(info.placement, SlicePlacement::kBox);
  EXPECT_EQ(info.box_orientation.values, box.orientation.values);
}

}  // namespace
}  // namespace slicestream
