// Requests: SetSlice, RemoveSlice, GetSlice, GetStatus, SetParameters, their errors, slices
// that persist across scans, default slices and the publish rate.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "pipeline/stages/on_demand_slices.hpp"
#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using test::call;

class CommandsTest : public ::testing::Test {
 protected:
  void start(PipelineConfig config = test::small_config()) {
    pipeline_ = std::make_unique<Pipeline>(config, test::cpu_backend(), sink_);
    pipeline_->start();
  }

  test::RecordingSink sink_;
  std::unique_ptr<Pipeline> pipeline_;
  test::TestScan scan_ = test::make_parallel_scan(1, {12, 32}, 24);
};

// One update, hence one publication, per frame (publish_rate_hz 0).
PipelineConfig unbatched_config() {
  PipelineConfig config = test::small_config();
  config.max_projection_batch = 1;
  return config;
}

TEST_F(CommandsTest, BeforeAnyScanSlicesAreKeptAndGetSliceFails) {
  start(unbatched_config());
  const SetSliceCommand axial = test::axial_slice(scan_.description, 9, 16);
  const CommandReply set = call(*pipeline_, axial);
  EXPECT_EQ(set.status.code, StatusCode::kOk) << set.status.message;
  const CommandReply get = call(*pipeline_, GetSliceCommand{axial.orientation, 16, 16});
  EXPECT_EQ(get.status.code, StatusCode::kFailedPrecondition);
  EXPECT_FALSE(get.status.message.empty());

  // The scan reconstructs the client's slice beside the default slices, which a client removes
  // (RemoveSlice) when it wants only its own.
  test::begin_scan(*pipeline_, scan_);
  test::feed_phantom(*pipeline_, scan_, 0, 24);
  pipeline_->wait_idle();
  // Every frame's update published, or replaced by a newer one while the publish stage was behind.
  const std::uint64_t coalesced = pipeline_->metrics().publications_coalesced;
  EXPECT_EQ(sink_.slices().size() + coalesced, test::slice_count(*pipeline_) * 24u);
  EXPECT_EQ(sink_.last_slice(9)->projections_integrated, 24u);
  EXPECT_EQ(sink_.last_slice(0)->projections_integrated, 24u);
  const CommandReply status = call(*pipeline_, GetStatusCommand{});
  ASSERT_TRUE(status.report.has_value());
  ASSERT_EQ(status.report->slices.size(), 4u);
  EXPECT_EQ(status.report->slices[3].slice_id, 9u);
}

TEST_F(CommandsTest, DefaultSlicesExistWhenAScanStarts) {
  PipelineConfig config = test::small_config();
  config.default_slice_size = 20;
  start(config);
  test::begin_scan(*pipeline_, scan_);
  test::feed_phantom(*pipeline_, scan_, 0, 2);
  pipeline_->wait_idle();
  const std::array<SliceOrientation, 3> expected = default_slices(scan_.description.volume);
  for (std::uint32_t id = 0; id < 3; ++id) {
    const std::optional<SliceImage> slice = sink_.last_slice(id);
    ASSERT_TRUE(slice.has_value());
    // The longer side has default_slice_size pixels; the pixels are square (box 32 x 32 x 12).
    EXPECT_EQ(slice->width, 20);
    EXPECT_EQ(slice->height, id == 2 ? 20 : 8);
    EXPECT_EQ(slice->orientation.values, expected[id].values);
  }
}

TEST_F(CommandsTest, InvalidRequestsGetClearErrors) {
  PipelineConfig config = test::small_config();
  config.max_slices = 4;
  config.max_slice_side = 256;
  start(config);
  test::begin_scan(*pipeline_, scan_);
  test::feed_phantom(*pipeline_, scan_, 0, 3);
  pipeline_->wait_idle();

  SetSliceCommand parallel_axes = test::axial_slice(scan_.description, 10, 16);
  parallel_axes.orientation.values[3] = parallel_axes.orientation.values[0];
  parallel_axes.orientation.values[4] = parallel_axes.orientation.values[1];
  parallel_axes.orientation.values[5] = parallel_axes.orientation.values[2];
  EXPECT_EQ(call(*pipeline_, parallel_axes).status.code, StatusCode::kInvalidArgument);

  SetSliceCommand nan = test::axial_slice(scan_.description, 10, 16);
  nan.orientation.values[8] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(call(*pipeline_, nan).status.code, StatusCode::kInvalidArgument);

  SetSliceCommand too_big = test::axial_slice(scan_.description, 10, 257);
  EXPECT_EQ(call(*pipeline_, too_big).status.code, StatusCode::kInvalidArgument);
  SetSliceCommand empty = test::axial_slice(scan_.description, 10, 0);
  EXPECT_EQ(call(*pipeline_, empty).status.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(call(*pipeline_, GetSliceCommand{too_big.orientation, 300, 10}).status.code,
            StatusCode::kInvalidArgument);

  // Three defaults + one more = 4 = max_slices; a fifth is refused, replacing one is fine.
  EXPECT_TRUE(call(*pipeline_, test::axial_slice(scan_.description, 10, 16)).status.ok());
  const CommandReply fifth = call(*pipeline_, test::axial_slice(scan_.description, 11, 16));
  EXPECT_EQ(fifth.status.code, StatusCode::kResourceExhausted) << fifth.status.message;
  EXPECT_TRUE(call(*pipeline_, test::oblique_slice(scan_.description, 10, 24)).status.ok());

  const CommandReply unknown = call(*pipeline_, RemoveSliceCommand{77});
  EXPECT_EQ(unknown.status.code, StatusCode::kNotFound);
  EXPECT_NE(unknown.status.message.find("77"), std::string::npos);
  EXPECT_TRUE(call(*pipeline_, RemoveSliceCommand{10}).status.ok());
  EXPECT_EQ(call(*pipeline_, RemoveSliceCommand{10}).status.code, StatusCode::kNotFound);

  // SetParameters is all-or-nothing: a bad cutoff leaves the publish rate unchanged.
  SetParametersCommand bad;
  bad.publish_rate_hz = 5;
  bad.filter_window = FilterWindow::kHann;
  bad.filter_cutoff = 1.5f;
  EXPECT_EQ(call(*pipeline_, bad).status.code, StatusCode::kInvalidArgument);
  SetParametersCommand negative;
  negative.preview_interval_s = -1;
  EXPECT_EQ(call(*pipeline_, negative).status.code, StatusCode::kInvalidArgument);
  SetParametersCommand infinite;
  infinite.rotation_axis_offset_px = std::numeric_limits<double>::infinity();
  EXPECT_EQ(call(*pipeline_, infinite).status.code, StatusCode::kInvalidArgument);
  SetParametersCommand mode;
  mode.window_mode = static_cast<WindowMode>(9);
  EXPECT_EQ(call(*pipeline_, mode).status.code, StatusCode::kInvalidArgument);
  const CommandReply status = call(*pipeline_, GetStatusCommand{});
  ASSERT_TRUE(status.report.has_value());
  EXPECT_EQ(status.report->parameters.publish_rate_hz, 0);
  EXPECT_EQ(status.report->parameters.filter.window, FilterWindow::kRamLak);
}

// The reconstruct stage completes a partial filter change with the filter in force, and refuses
// values outside their ranges with reason "bad_value" (counted), changing nothing.
TEST_F(CommandsTest, SetParametersCompletesPartialFiltersAndRefusesBadValues) {
  start();
  SetParametersCommand hann;
  hann.filter_window = FilterWindow::kHann;
  hann.filter_cutoff = 0.7f;
  ASSERT_TRUE(call(*pipeline_, hann).status.ok());
  SetParametersCommand cutoff_only;
  cutoff_only.filter_cutoff = 0.25f;
  CommandReply reply = call(*pipeline_, cutoff_only);
  ASSERT_TRUE(reply.parameters.has_value()) << reply.status.message;
  EXPECT_EQ(reply.parameters->filter.window, FilterWindow::kHann);
  EXPECT_EQ(reply.parameters->filter.cutoff, 0.25f);
  SetParametersCommand window_only;
  window_only.filter_window = FilterWindow::kCosine;
  reply = call(*pipeline_, window_only);
  ASSERT_TRUE(reply.parameters.has_value()) << reply.status.message;
  EXPECT_EQ(reply.parameters->filter.window, FilterWindow::kCosine);
  EXPECT_EQ(reply.parameters->filter.cutoff, 0.25f);

  std::vector<SetParametersCommand> bad(4);
  bad[0].filter_cutoff = std::numeric_limits<float>::quiet_NaN();
  bad[1].publish_rate_hz = -1;
  bad[2].preview_interval_s = -0.5;
  bad[3].rotation_axis_offset_px = 1e9;
  for (const SetParametersCommand& command : bad) {
    const CommandReply refused = call(*pipeline_, command);
    EXPECT_EQ(refused.status.code, StatusCode::kInvalidArgument) << refused.status.message;
    EXPECT_EQ(refused.status.reason, "bad_value");
  }
  EXPECT_EQ(pipeline_->metrics().requests_refused.at("bad_value"), 4u);
  const CommandReply status = call(*pipeline_, GetStatusCommand{});
  ASSERT_TRUE(status.report.has_value());
  EXPECT_EQ(status.report->parameters.filter.cutoff, 0.25f);
  EXPECT_EQ(status.report->parameters.publish_rate_hz, 0);
}

TEST_F(CommandsTest, SetSliceDuringAScanRecomputesAndPublishesAtOnce) {
  start(unbatched_config());
  test::begin_scan(*pipeline_, scan_);
  test::feed_phantom(*pipeline_, scan_, 0, 30);
  pipeline_->wait_idle();
  const SetSliceCommand oblique = test::oblique_slice(scan_.description, 4, 28);
  const CommandReply set = call(*pipeline_, oblique);
  ASSERT_TRUE(set.status.ok()) << set.status.message;
  pipeline_->wait_idle();  // the reply comes before the publish stage has handed it to the sink
  ASSERT_EQ(sink_.slices_of(4).size(), 1u);
  const CommandReply full = call(*pipeline_, GetSliceCommand{oblique.orientation, 28, 28});
  ASSERT_TRUE(full.slice.has_value());
  EXPECT_EQ(full.slice->projections_integrated, 30u);
  EXPECT_LT(test::relative_error(sink_.last_slice(4)->values, full.slice->values), 1e-6);
  const std::vector<float> reference =
      phantom::sample(scan_.phantom, slice_grid(oblique.orientation, 28, 28), 3);
  EXPECT_LT(test::relative_error(full.slice->values, reference), 0.2);
  // Later frames update it like the others: every update, as the publish stage keeps up (each
  // frame waits for the previous one's publications).
  const std::uint64_t coalesced = pipeline_->metrics().publications_coalesced;
  for (std::uint32_t i = 30; i < 35; ++i) {
    test::feed_phantom(*pipeline_, scan_, i, 1);
    pipeline_->wait_idle();
  }
  EXPECT_EQ(sink_.slices_of(4).size(), 6u);
  EXPECT_EQ(sink_.last_slice(4)->projections_integrated, 35u);
  EXPECT_EQ(pipeline_->metrics().publications_coalesced, coalesced);
}

// A GetSlice large enough to be computed in several bands of rows (OnDemandSlices) equals the
// live slice of the same orientation, computed as one target.
TEST_F(CommandsTest, ALargeGetSliceComputedInBandsEqualsTheLiveSlice) {
  start(unbatched_config());
  test::begin_scan(*pipeline_, scan_);
  test::feed_phantom(*pipeline_, scan_, 0, 24);
  pipeline_->wait_idle();
  SetSliceCommand oblique = test::oblique_slice(scan_.description, 5, 2048);
  oblique.height = 1000;
  const std::size_t rows_per_band = OnDemandSlices::kUnitUpdates / (2048 * 24);
  ASSERT_GE((1000 + rows_per_band - 1) / rows_per_band, 3u) << "at least three bands";
  ASSERT_TRUE(call(*pipeline_, oblique).status.ok());
  pipeline_->wait_idle();
  const CommandReply banded = call(*pipeline_, GetSliceCommand{oblique.orientation, 2048, 1000});
  ASSERT_TRUE(banded.slice.has_value()) << banded.status.message;
  EXPECT_EQ(banded.slice->projections_integrated, 24u);
  ASSERT_TRUE(sink_.last_slice(5).has_value());
  EXPECT_LT(test::relative_error(sink_.last_slice(5)->values, banded.slice->values), 1e-5);
}

TEST_F(CommandsTest, StatusReportsScanStateParametersAndMetrics) {
  start();
  CommandReply status = call(*pipeline_, GetStatusCommand{});
  ASSERT_TRUE(status.report.has_value());
  EXPECT_EQ(status.report->scan_state, ScanState::kIdle);
  EXPECT_FALSE(status.report->scan_active);
  EXPECT_EQ(status.report->backend, "cpu");
  EXPECT_FALSE(status.report->backend_device.empty());

  ASSERT_TRUE(pipeline_->submit(ScanBegin{scan_.description, 0}));
  pipeline_->wait_idle();
  status = call(*pipeline_, GetStatusCommand{});
  EXPECT_EQ(status.report->scan_state, ScanState::kCalibrating);
  EXPECT_TRUE(status.report->scan_active);
  EXPECT_EQ(status.report->scan_id, 1u);

  test::feed_phantom(*pipeline_, scan_, 0, 24);
  pipeline_->wait_idle();
  status = call(*pipeline_, GetStatusCommand{});
  EXPECT_EQ(status.report->scan_state, ScanState::kReconstructing);
  const MetricsSnapshot& m = status.report->metrics;
  EXPECT_EQ(m.projections_integrated, 24u);
  ASSERT_EQ(m.stages.size(), 5u);
  EXPECT_EQ(m.stages[0].name, "ingest");
  EXPECT_EQ(m.stages[4].name, "publish");
  EXPECT_EQ(m.stages[1].items, 24u);  // preprocess counts projections
  EXPECT_EQ(m.stages[2].items, 24u);
  EXPECT_GT(m.stages[3].service_us.count, 0u);
  EXPECT_GT(m.stages[3].rate_per_s, 0.0);
  EXPECT_GT(m.stages[3].busy_fraction, 0.0);
  EXPECT_LE(m.stages[3].busy_fraction, 1.0);
  EXPECT_EQ(m.stages[0].queue_capacity, 8u);
  EXPECT_EQ(m.frame_to_slice_us.count, 24u);
  EXPECT_GT(m.frame_to_slice_us.p50_us, 0.0);
  EXPECT_LE(m.frame_to_slice_us.p50_us, m.frame_to_slice_us.p99_us);
  EXPECT_LE(m.frame_to_slice_us.p99_us, m.frame_to_slice_us.max_us);

  test::end_scan(*pipeline_, scan_);
  pipeline_->wait_idle();
  status = call(*pipeline_, GetStatusCommand{});
  EXPECT_EQ(status.report->scan_state, ScanState::kEnded);
  EXPECT_FALSE(status.report->scan_active);
  // GetSlice still works on the ended scan's store.
  EXPECT_TRUE(call(*pipeline_,
                   GetSliceCommand{test::axial_slice(scan_.description, 0, 8).orientation, 8, 8})
                  .status.ok());
}

TEST_F(CommandsTest, PublishRateLimitsPublicationsButEveryFrameIsIntegrated) {
  PipelineConfig config = test::small_config();
  config.parameters.publish_rate_hz = 10;  // at most one publication per slice per 100 ms
  start(config);
  const SetSliceCommand axial = test::axial_slice(scan_.description, 3, 16);
  ASSERT_TRUE(call(*pipeline_, axial).status.ok());
  test::begin_scan(*pipeline_, scan_);
  const auto begin = std::chrono::steady_clock::now();
  for (std::uint32_t i = 0; i < 48; ++i) {
    test::feed_phantom(*pipeline_, scan_, i, 1);
    std::this_thread::sleep_for(5ms);
  }
  pipeline_->wait_idle();  // also waits for the deferred publication of the last frames
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const std::vector<SliceImage> published = sink_.slices_of(3);
  EXPECT_EQ(pipeline_->metrics().projections_integrated, 48u);
  EXPECT_LE(static_cast<double>(published.size()), elapsed_s * 10 + 2);
  EXPECT_GE(published.size(), 2u);
  // The last publication contains every frame, without another frame arriving.
  EXPECT_EQ(published.back().projections_integrated, 48u);
  for (std::size_t i = 1; i < published.size(); ++i) {
    EXPECT_EQ(published[i].sequence, published[i - 1].sequence + 1);
  }
  EXPECT_EQ(pipeline_->metrics().frame_to_slice_us.count, 48u);
}

TEST_F(CommandsTest, FilterChangeAppliesToNewProjections) {
  start();
  const SetSliceCommand axial = test::axial_slice(scan_.description, 3, 32);
  ASSERT_TRUE(call(*pipeline_, axial).status.ok());
  test::begin_scan(*pipeline_, scan_);
  test::feed_phantom(*pipeline_, scan_, 0, 24);
  pipeline_->wait_idle();
  const std::vector<float> ram_lak = sink_.last_slice(3)->values.to_vector();
  SetParametersCommand hann;
  hann.filter_window = FilterWindow::kHann;
  hann.filter_cutoff = 0.8f;
  const CommandReply reply = call(*pipeline_, hann);
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  ASSERT_TRUE(reply.parameters.has_value());
  EXPECT_EQ(reply.parameters->filter.window, FilterWindow::kHann);
  // After one more rotation every slot holds a Hann-filtered projection: smoother, same scale.
  test::feed_phantom(*pipeline_, scan_, 24, 24);
  pipeline_->wait_idle();
  const std::vector<float> smooth = sink_.last_slice(3)->values.to_vector();
  EXPECT_GT(test::relative_error(smooth, ram_lak), 0.01);
  double sum_a = 0;
  double sum_b = 0;
  for (std::size_t i = 0; i < smooth.size(); ++i) {
    sum_a += ram_lak[i];
    sum_b += smooth[i];
  }
  EXPECT_NEAR(sum_b, sum_a, 0.05 * std::abs(sum_a));
  const CommandReply full = call(*pipeline_, GetSliceCommand{axial.orientation, 32, 32});
  EXPECT_LT(test::relative_error(smooth, full.slice->values), 1e-5);
}

}  // namespace
}  // namespace slicestream
