// Scans one after the other, back-pressure from a slow sink, and the accounting of a stop with
// and without drain: every submitted frame is either integrated or counted.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "gated_backend.hpp"
#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using test::call;

std::uint64_t discards(const MetricsSnapshot& m, const std::string& reason) {
  const auto it = m.discards.find(reason);
  return it == m.discards.end() ? 0 : it->second;
}

double phantom_error(const test::TestScan& scan, const SliceImage& image) {
  const std::vector<float> reference =
      phantom::sample(scan.phantom, slice_grid(image.orientation, image.width, image.height), 3);
  return test::relative_error(image.values, reference);
}

TEST(Lifecycle, BackToBackScansOfDifferentShapes) {
  test::RecordingSink sink;
  Pipeline pipeline(test::small_config(), test::cpu_backend(), sink);
  pipeline.start();
  const test::TestScan first = test::make_parallel_scan(1, {12, 40}, 48);
  const test::TestScan second = test::make_cone_scan(2, {20, 48}, 60, 150, 80);
  test::begin_scan(pipeline, first);
  test::feed_phantom(pipeline, first, 0, 48);
  test::end_scan(pipeline, first);
  test::begin_scan(pipeline, second);
  test::feed_phantom(pipeline, second, 0, 60);
  test::end_scan(pipeline, second);
  pipeline.wait_idle();
  const MetricsSnapshot m = pipeline.metrics();
  EXPECT_EQ(m.scans_started, 2u);
  EXPECT_EQ(m.scans_ended, 2u);
  EXPECT_EQ(m.projections_integrated, 108u);
  EXPECT_TRUE(m.discards.empty());
  const std::optional<SliceImage> axial = sink.last_slice(2);
  ASSERT_TRUE(axial.has_value());
  EXPECT_EQ(axial->scan_id, 2u);
  EXPECT_EQ(axial->projections_integrated, 60u);
  EXPECT_EQ(axial->width, 32);
  EXPECT_LT(phantom_error(second, *axial), 0.15);
  EXPECT_EQ(sink.events_of_kind(EventKind::kScanEnded), 2u);
}

TEST(Lifecycle, ANewScanBeginEndsTheRunningScan) {
  test::RecordingSink sink;
  Pipeline pipeline(test::small_config(), test::cpu_backend(), sink);
  pipeline.start();
  const test::TestScan first = test::make_parallel_scan(5, {12, 32}, 24);
  const test::TestScan second = test::make_parallel_scan(6, {12, 32}, 24);
  test::begin_scan(pipeline, first);
  test::feed_phantom(pipeline, first, 0, 10);
  test::begin_scan(pipeline, second);  // no ScanEnd for the first
  test::feed_phantom(pipeline, second, 0, 24);
  pipeline.wait_idle();
  const MetricsSnapshot m = pipeline.metrics();
  EXPECT_EQ(m.scans_ended, 1u);
  EXPECT_EQ(m.projections_integrated, 34u);
  const std::vector<ServerEvent> events = sink.events();
  const auto ended = std::find_if(events.begin(), events.end(), [](const ServerEvent& e) {
    return e.kind == EventKind::kScanEnded;
  });
  ASSERT_NE(ended, events.end());
  EXPECT_EQ(ended->scan_id, 5u);
  EXPECT_NE(ended->message.find("superseded"), std::string::npos) << ended->message;
  // Late frames of the first scan are now "scan_ended".
  test::feed_phantom(pipeline, first, 10, 2);
  pipeline.wait_idle();
  EXPECT_EQ(discards(pipeline.metrics(), "scan_ended"), 2u);
  EXPECT_LT(phantom_error(second, *sink.last_slice(2)), 0.15);
}

// A scan whose detector died ends after the scan timeout, with its reason in the events and the
// status; its later frames are counted as scan_ended. Data keeps a scan alive.
TEST(Lifecycle, AScanWithoutDataEndsAfterTheScanTimeout) {
  test::RecordingSink sink;
  PipelineConfig config = test::small_config();
  config.scan_timeout_s = 0.4;
  Pipeline pipeline(config, test::cpu_backend(), sink);
  pipeline.start();
  const test::TestScan scan = test::make_parallel_scan(8, {12, 32}, 24);
  test::begin_scan(pipeline, scan);
  // Frames every 0.1 s for 0.8 s: twice the timeout, and the scan still runs.
  for (std::uint32_t i = 0; i < 8; ++i) {
    test::feed_phantom(pipeline, scan, i, 1);
    std::this_thread::sleep_for(100ms);
  }
  StatusReport status = *call(pipeline, GetStatusCommand{}).report;
  EXPECT_EQ(status.scan_state, ScanState::kReconstructing);
  EXPECT_TRUE(status.scan_end_reason.empty());

  ASSERT_TRUE(sink.wait_for([&] { return sink.events_of_kind(EventKind::kScanEnded) == 1; }, 5s));
  status = *call(pipeline, GetStatusCommand{}).report;
  EXPECT_EQ(status.scan_state, ScanState::kEnded);
  EXPECT_FALSE(status.scan_active);
  EXPECT_NE(status.scan_end_reason.find("no data for 0.4 s"), std::string::npos)
      << status.scan_end_reason;
  EXPECT_EQ(sink.events_with_reason("scan_timeout"), 1u);
  // The scan's own record says how it ended, as a ScanEnd or a superseding scan would.
  ASSERT_FALSE(status.metrics.recent_scans.empty());
  const ScanRecord& record = status.metrics.recent_scans.back();
  EXPECT_EQ(record.scan_id, scan.description.scan_id);
  EXPECT_TRUE(record.ended);
  EXPECT_EQ(record.end_reason, "timeout");
  const std::vector<ServerEvent> events = sink.events();
  const auto ended = std::find_if(events.begin(), events.end(), [](const ServerEvent& e) {
    return e.kind == EventKind::kScanEnded;
  });
  ASSERT_NE(ended, events.end());
  EXPECT_NE(ended->message.find("--scan-timeout"), std::string::npos) << ended->message;
  EXPECT_EQ(pipeline.metrics().projections_integrated, 8u);

  test::feed_phantom(pipeline, scan, 8, 2);
  pipeline.wait_idle();
  EXPECT_EQ(discards(pipeline.metrics(), "scan_ended"), 2u);
}

TEST(Lifecycle, ASlowSinkThinsPublicationsButLosesNothing) {
  test::RecordingSink sink;
  sink.set_slice_delay(2ms);
  PipelineConfig config = test::small_config();
  config.queue_depth = 2;
  config.max_projection_batch = 1;  // one update, hence one publication due, per frame
  Pipeline pipeline(config, test::cpu_backend(), sink);
  pipeline.start();
  const test::TestScan scan = test::make_parallel_scan(7, {12, 32}, 24);
  test::begin_scan(pipeline, scan);
  // 60 frames x 3 slices x 2 ms would keep the sink busy for ~360 ms: a slice whose earlier
  // publications still wait is published again only once the publish stage has taken one, with
  // its latest values (latest wins), so reconstruction never waits for the sink.
  test::feed_phantom(pipeline, scan, 0, 60);
  pipeline.wait_idle();
  const MetricsSnapshot m = pipeline.metrics();
  EXPECT_EQ(m.projections_integrated, 60u);
  EXPECT_TRUE(m.discards.empty());
  for (std::uint32_t id = 0; id < 3; ++id) {
    const std::vector<SliceImage> published = sink.slices_of(id);
    ASSERT_FALSE(published.empty()) << "slice " << id;
    EXPECT_LE(published.size(), 60u);
    // Each publication is complete and newer than the one before; the last shows every frame.
    for (std::size_t i = 1; i < published.size(); ++i) {
      EXPECT_EQ(published[i].sequence, published[i - 1].sequence + 1);
      EXPECT_GT(published[i].projections_integrated, published[i - 1].projections_integrated);
      EXPECT_EQ(published[i].values.size(), published[0].values.size());
    }
    EXPECT_EQ(published.back().projections_integrated, 60u) << "slice " << id;
  }
  EXPECT_EQ(m.slices_published,
            sink.slices_of(0).size() + sink.slices_of(1).size() + sink.slices_of(2).size());
  EXPECT_EQ(m.frame_to_slice_us.count, 60u) << "every frame's first publication is timed once";
}

TEST(Lifecycle, StopWithDrainIntegratesEverythingAccepted) {
  test::RecordingSink sink;
  sink.set_slice_delay(1ms);
  PipelineConfig config = test::small_config();
  config.queue_depth = 4;
  Pipeline pipeline(config, test::cpu_backend(), sink);
  pipeline.start();
  const test::TestScan scan = test::make_parallel_scan(8, {12, 32}, 24);
  test::begin_scan(pipeline, scan);
  test::feed_phantom(pipeline, scan, 0, 30);
  pipeline.stop(/*drain=*/true);
  const MetricsSnapshot m = pipeline.metrics();
  EXPECT_EQ(m.projections_integrated, 30u);
  EXPECT_EQ(discards(m, "shutdown"), 0u);
  EXPECT_EQ(sink.last_slice(0)->projections_integrated, 30u);
  // After the stop nothing is accepted, and that is counted too.
  EXPECT_FALSE(
      pipeline.submit(test::make_phantom_frame(scan, 30, scan.description.geometry.vectors[6])));
  EXPECT_EQ(discards(pipeline.metrics(), "shutdown"), 1u);
  const CommandReply refused = call(pipeline, GetStatusCommand{});
  EXPECT_EQ(refused.status.code, StatusCode::kUnavailable);
}

TEST(Lifecycle, StopWithoutDrainCountsWhatWasLeft) {
  test::RecordingSink sink;
  PipelineConfig config = test::small_config();
  config.queue_depth = 4;
  // The reconstruct stage stalls in its store update (a slow GPU, say): the queues fill up
  // behind it. (A stalled publish stage no longer does: slice publications are thinned.)
  auto backend = std::make_unique<test::GatedBackend>();
  test::GatedBackend* gate = backend.get();
  Pipeline pipeline(config, std::move(backend), sink);
  pipeline.start();
  const test::TestScan scan = test::make_parallel_scan(9, {12, 32}, 24);
  test::begin_scan(pipeline, scan);
  pipeline.wait_idle();
  std::atomic<std::uint64_t> submitted{0};
  std::thread sender([&] {
    for (std::uint32_t i = 0; i < 200; ++i) {
      RawFrame frame = test::make_phantom_frame(scan, i, scan.description.geometry.vectors[i % 24]);
      ++submitted;
      if (!pipeline.submit(std::move(frame))) break;
    }
  });
  // Wait until the sender is blocked by back-pressure, then stop without drain.
  ASSERT_TRUE(sink.wait_for([&] { return pipeline.metrics().stages[0].queue_depth == 4; }, 10s));
  std::this_thread::sleep_for(50ms);
  std::thread stopper([&] { pipeline.stop(/*drain=*/false); });
  std::this_thread::sleep_for(50ms);
  gate->open();
  stopper.join();
  sender.join();
  const MetricsSnapshot m = pipeline.metrics();
  EXPECT_LT(m.projections_integrated, submitted.load());
  EXPECT_GT(discards(m, "shutdown"), 0u);
  // Every projection submitted is either integrated or counted as left at shutdown.
  EXPECT_EQ(m.projections_integrated + discards(m, "shutdown"), submitted.load());
}

}  // namespace
}  // namespace slicestream
