// Every class of bad input is counted under its reason, reported as an event, and the pipeline
// keeps working: a following valid scan reconstructs correctly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "pipeline/metrics/event_reporter.hpp"
#include "pipeline_test_support.hpp"
#include "tests/pipeline/forwarding_backend.hpp"

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using test::call;

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pipeline_ = std::make_unique<Pipeline>(test::small_config(), test::cpu_backend(), sink_);
    pipeline_->start();
  }

  // Submits `frame`, waits, and checks that exactly `reason` grew by `count` with an event.
  void expect_discard(RawFrame frame, const std::string& reason, std::uint64_t count = 1) {
    const std::uint64_t before = discards(reason);
    ASSERT_TRUE(pipeline_->submit(std::move(frame)));
    pipeline_->wait_idle();
    EXPECT_EQ(discards(reason), before + count) << reason;
    EXPECT_GE(sink_.events_with_reason(reason), 1u) << reason;
  }

  std::uint64_t discards(const std::string& reason) const {
    const MetricsSnapshot m = pipeline_->metrics();
    const auto it = m.discards.find(reason);
    return it == m.discards.end() ? 0 : it->second;
  }

  // A valid scan afterwards still reconstructs the phantom.
  void expect_valid_scan_reconstructs(std::uint64_t scan_id) {
    const test::TestScan scan = test::make_parallel_scan(scan_id, {12, 40}, 48);
    const std::uint64_t integrated_before = pipeline_->metrics().projections_integrated;
    test::begin_scan(*pipeline_, scan);
    test::feed_phantom(*pipeline_, scan, 0, 48);
    test::end_scan(*pipeline_, scan);
    pipeline_->wait_idle();
    EXPECT_EQ(pipeline_->metrics().projections_integrated, integrated_before + 48);
    const std::optional<SliceImage> axial = sink_.last_slice(2);
    ASSERT_TRUE(axial.has_value());
    EXPECT_EQ(axial->scan_id, scan_id);
    const std::vector<float> reference = phantom::sample(
        scan.phantom, slice_grid(axial->orientation, axial->width, axial->height), 3);
    EXPECT_LT(test::relative_error(axial->values, reference), 0.15);
  }

  test::RecordingSink sink_;
  std::unique_ptr<Pipeline> pipeline_;
};

TEST_F(BadInputTest, FramesOutsideAScanAreDiscardedWithTheirReason) {
  const test::TestScan scan = test::make_parallel_scan(21, {12, 32}, 24);
  expect_discard(test::make_calibration_frame(scan, FrameKind::kDark, 0), "no_active_scan");
  ASSERT_TRUE(pipeline_->submit(ScanEnd{21, 0, 0}));
  pipeline_->wait_idle();
  EXPECT_EQ(discards("no_active_scan"), 2u);

  // An invalid ScanBegin, then a frame of that scan.
  test::TestScan broken = test::make_parallel_scan(22, {12, 32}, 24);
  broken.description.volume.max_mm.x = broken.description.volume.min_mm.x;  // degenerate box
  ASSERT_TRUE(pipeline_->submit(ScanBegin{broken.description, 0}));
  pipeline_->wait_idle();
  EXPECT_EQ(discards("invalid_scan"), 1u);
  EXPECT_GE(sink_.events_with_reason("invalid_scan"), 1u);
  expect_discard(test::make_phantom_frame(broken, 0, broken.description.geometry.vectors[0]),
                 "scan_rejected");

  // A finished scan: its frames and a second ScanEnd.
  test::begin_scan(*pipeline_, scan);
  test::feed_phantom(*pipeline_, scan, 0, 3);
  test::end_scan(*pipeline_, scan);
  pipeline_->wait_idle();
  expect_discard(test::make_phantom_frame(scan, 3, scan.description.geometry.vectors[3]),
                 "scan_ended");
  ASSERT_TRUE(pipeline_->submit(ScanEnd{21, 0, 0}));
  pipeline_->wait_idle();
  EXPECT_EQ(discards("scan_ended"), 2u);
  expect_valid_scan_reconstructs(23);
}

TEST_F(BadInputTest, MalformedFramesOfTheActiveScanAreDiscarded) {
  const test::TestScan scan = test::make_parallel_scan(31, {12, 32}, 24);
  test::begin_scan(*pipeline_, scan);
  const ProjectionVector& v0 = scan.description.geometry.vectors[0];

  RawFrame other = test::make_phantom_frame(scan, 0, v0);
  other.scan_id = 99;
  expect_discard(std::move(other), "wrong_scan_id");

  RawFrame rows = test::make_phantom_frame(scan, 0, v0);
  rows.shape.rows = 11;
  expect_discard(std::move(rows), "shape_mismatch");
  RawFrame type = test::make_phantom_frame(scan, 0, v0);
  type.pixel_type = PixelType::kUint32;
  expect_discard(std::move(type), "shape_mismatch");

  RawFrame short_payload = test::make_phantom_frame(scan, 0, v0);
  short_payload.payload_bytes -= 2;
  expect_discard(std::move(short_payload), "bad_payload_size");
  RawFrame no_payload = test::make_phantom_frame(scan, 0, v0);
  no_payload.payload.reset();
  expect_discard(std::move(no_payload), "bad_payload_size", 1);

  expect_discard(test::make_calibration_frame(scan, FrameKind::kDark, 2), "index_out_of_range");
  expect_discard(test::make_calibration_frame(scan, FrameKind::kFlat, 7), "index_out_of_range");

  RawFrame position = test::make_phantom_frame(scan, 0, v0);
  position.position = 24;
  expect_discard(std::move(position), "position_out_of_range");

  RawFrame kind = test::make_phantom_frame(scan, 0, v0);
  kind.kind = static_cast<FrameKind>(7);
  expect_discard(std::move(kind), "unknown_kind");

  RawFrame both = test::make_phantom_frame(scan, 0, v0);
  both.position = 0;
  both.angle_rad = 0.0;
  expect_discard(std::move(both), "invalid_placement");

  RawFrame angle = test::make_phantom_frame(scan, 0, v0);
  angle.angle_rad = std::numeric_limits<double>::quiet_NaN();
  expect_discard(std::move(angle), "invalid_angle");

  // The scan still works, and a dark after the first projection is too late.
  test::feed_phantom(*pipeline_, scan, 0, 24);
  pipeline_->wait_idle();
  expect_discard(test::make_calibration_frame(scan, FrameKind::kDark, 0), "late_calibration_frame");
  EXPECT_EQ(pipeline_->metrics().projections_integrated, 24u);
  EXPECT_EQ(pipeline_->metrics().frames_received, 2u + 2 + 24);
  // 31 projection frames arrived (7 malformed); the sender claims 40.
  test::end_scan(*pipeline_, scan, /*frames_sent=*/40);
  pipeline_->wait_idle();
  EXPECT_GE(sink_.events_with_reason("frames_missing"), 1u);
  expect_valid_scan_reconstructs(32);
}

TEST_F(BadInputTest, VectorScansRejectAnglesAndNonFinitePixelsAreZeroed) {
  // A vector geometry (no circular parameters) with already-linear float32 frames.
  const test::TestScan circular = test::make_parallel_scan(41, {12, 32}, 24, PixelType::kFloat32);
  test::TestScan scan = circular;
  scan.description.circular_parallel.reset();
  ASSERT_TRUE(pipeline_->submit(ScanBegin{scan.description, 0}));
  RawFrame angle = test::make_phantom_frame(scan, 0, scan.description.geometry.vectors[0]);
  angle.angle_rad = 0.5;
  expect_discard(std::move(angle), "angle_not_supported");

  // Three NaN pixels and one infinity: zeroed, counted, the frame integrated.
  RawFrame nan_frame = test::make_phantom_frame(scan, 0, scan.description.geometry.vectors[0]);
  auto* bytes = const_cast<std::byte*>(nan_frame.payload.get());  // the test owns the buffer
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (std::size_t pixel : {5, 40, 77})
    std::memcpy(bytes + pixel * sizeof(float), &nan, 4);
  std::memcpy(bytes + 100 * sizeof(float), &inf, 4);
  // Pixels are not frames: the frame is integrated, nothing is counted as discarded.
  const std::map<std::string, std::uint64_t> discards_before = pipeline_->metrics().discards;
  ASSERT_TRUE(pipeline_->submit(std::move(nan_frame)));
  pipeline_->wait_idle();
  const MetricsSnapshot m = pipeline_->metrics();
  EXPECT_EQ(m.discards, discards_before);
  EXPECT_EQ(m.discards.count("non_finite_pixels"), 0u);
  EXPECT_GE(sink_.events_with_reason("non_finite_pixels"), 1u);
  EXPECT_EQ(m.pixels_non_finite, 4u);
  EXPECT_EQ(m.projections_integrated, 1u);
  EXPECT_GE(sink_.events_of_kind(EventKind::kWarning), 1u);
  expect_valid_scan_reconstructs(42);
}

TEST_F(BadInputTest, NonFiniteCalibrationSamplesAreLeftOutOfTheAverage) {
  test::TestScan scan = test::make_parallel_scan(52, {12, 32}, 24, PixelType::kFloat32);
  scan.description.already_linear = false;  // float32 counts with darks and flats
  scan.description.dark_count = 2;
  scan.description.flat_count = 1;
  ASSERT_TRUE(pipeline_->submit(ScanBegin{scan.description, 0}));
  RawFrame dark = test::make_calibration_frame(scan, FrameKind::kDark, 0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(const_cast<std::byte*>(dark.payload.get()) + 3 * sizeof(float), &nan, 4);
  ASSERT_TRUE(pipeline_->submit(std::move(dark)));
  pipeline_->wait_idle();
  EXPECT_GE(sink_.events_with_reason("non_finite_pixels"), 1u);
  EXPECT_TRUE(pipeline_->metrics().discards.empty());
  ASSERT_TRUE(pipeline_->submit(test::make_calibration_frame(scan, FrameKind::kDark, 1)));
  ASSERT_TRUE(pipeline_->submit(test::make_calibration_frame(scan, FrameKind::kFlat, 0)));
  test::feed_phantom(*pipeline_, scan, 0, 24);
  pipeline_->wait_idle();
  const MetricsSnapshot m = pipeline_->metrics();
  EXPECT_EQ(m.pixels_non_finite, 1u);
  EXPECT_EQ(m.projections_integrated, 24u);
  EXPECT_EQ(sink_.events_with_reason("incomplete_calibration"), 0u);
  const std::optional<SliceImage> axial = sink_.last_slice(2);
  ASSERT_TRUE(axial.has_value());
  const std::vector<float> reference =
      phantom::sample(scan.phantom, slice_grid(axial->orientation, axial->width, axial->height), 3);
  EXPECT_LT(test::relative_error(axial->values, reference), 0.15);
}

TEST_F(BadInputTest, IncompleteCalibrationWarnsAndStillReconstructs) {
  test::TestScan scan = test::make_parallel_scan(51, {12, 32}, 24, PixelType::kUint16, 3, 2);
  ASSERT_TRUE(pipeline_->submit(ScanBegin{scan.description, 0}));
  ASSERT_TRUE(pipeline_->submit(test::make_calibration_frame(scan, FrameKind::kDark, 0)));
  ASSERT_TRUE(pipeline_->submit(test::make_calibration_frame(scan, FrameKind::kFlat, 0)));
  ASSERT_TRUE(pipeline_->submit(test::make_calibration_frame(scan, FrameKind::kFlat, 1)));
  test::feed_phantom(*pipeline_, scan, 0, 24);  // only 1 of 3 darks arrived
  pipeline_->wait_idle();
  EXPECT_EQ(sink_.events_with_reason("incomplete_calibration"), 1u);
  EXPECT_EQ(pipeline_->metrics().projections_integrated, 24u);
  const std::optional<SliceImage> axial = sink_.last_slice(2);
  ASSERT_TRUE(axial.has_value());
  const std::vector<float> reference =
      phantom::sample(scan.phantom, slice_grid(axial->orientation, axial->width, axial->height), 3);
  EXPECT_LT(test::relative_error(axial->values, reference), 0.15);
}

TEST_F(BadInputTest, RejectedTransportMessagesAreCountedAndReported) {
  pipeline_->report_rejected("truncated_message", "a data message had no payload part", 0);
  pipeline_->report_rejected("oversized", "a payload of 3 GB exceeds the limit", 7);
  pipeline_->wait_idle();
  EXPECT_EQ(discards("truncated_message"), 1u);
  EXPECT_EQ(discards("oversized"), 1u);
  EXPECT_EQ(sink_.events_with_reason("oversized"), 1u);
  expect_valid_scan_reconstructs(61);
}

TEST_F(BadInputTest, IdenticalEventsAreRateLimitedButAllCounted) {
  const test::TestScan scan = test::make_parallel_scan(71, {12, 32}, 24);
  for (std::uint32_t i = 0; i < 30; ++i) {
    ASSERT_TRUE(pipeline_->submit(test::make_calibration_frame(scan, FrameKind::kDark, i)));
  }
  pipeline_->wait_idle();
  EXPECT_EQ(discards("no_active_scan"), 30u);
  EXPECT_EQ(sink_.events_with_reason("no_active_scan"),
            static_cast<std::size_t>(EventReporter::kMaxPerWindow));
  // After the window, one summary announces the suppressed ones.
  ASSERT_TRUE(sink_.wait_for(
      [&] {
        return sink_.events_with_reason("no_active_scan") ==
               static_cast<std::size_t>(EventReporter::kMaxPerWindow) + 1;
      },
      3s));
  const std::vector<ServerEvent> events = sink_.events();
  EXPECT_NE(events.back().message.find("25 similar"), std::string::npos) << events.back().message;
}

TEST(BackendErrors, AScanThatDoesNotFitIsReportedAndTheNextScanWorks) {
  test::RecordingSink sink;
  CpuBackendOptions options;
  options.threads = 2;
  options.memory_limit_bytes = 8u << 20;
  Pipeline pipeline(test::small_config(), std::make_unique<CpuBackend>(options), sink);
  pipeline.start();
  // 720 slots of 64 x 64 floats = 11.8 MB: over the 8 MB limit.
  const test::TestScan huge = test::make_parallel_scan(81, {64, 64}, 720, PixelType::kFloat32);
  ASSERT_TRUE(pipeline.submit(ScanBegin{huge.description, 0}));
  ASSERT_TRUE(
      pipeline.submit(test::make_phantom_frame(huge, 0, huge.description.geometry.vectors[0])));
  pipeline.wait_idle();
  MetricsSnapshot m = pipeline.metrics();
  EXPECT_EQ(m.errors, 1u);
  EXPECT_EQ(m.discards["scan_rejected"], 1u);
  EXPECT_GE(sink.events_with_reason("backend_error"), 1u);
  const std::vector<ServerEvent> events = sink.events();
  EXPECT_NE(events.front().message.find("does not fit"), std::string::npos)
      << events.front().message;

  const test::TestScan scan = test::make_parallel_scan(82, {12, 40}, 48);
  test::begin_scan(pipeline, scan);
  test::feed_phantom(pipeline, scan, 0, 48);
  pipeline.wait_idle();
  m = pipeline.metrics();
  EXPECT_EQ(m.projections_integrated, 48u);
  EXPECT_EQ(m.scans_started, 1u);
}

// A backend whose store clamps 3 values of every projection it stores (as the CUDA store does with
// fp16 texels for values beyond +-65504), counting from zero in every scan.
class ClampingBackend final : public test::ForwardingBackend {
 public:
  void begin_scan(const ScanSetup& setup) override {
    ForwardingBackend::begin_scan(setup);
    clamped_ = 0;
  }
  void replace_projections(std::vector<ProjectionUpdate>& updates, float scale) override {
    ForwardingBackend::replace_projections(updates, scale);
    clamped_ += 3 * updates.size();
  }
  std::uint64_t store_values_clamped() const override { return clamped_; }

 private:
  std::uint64_t clamped_ = 0;
};

// Values the store clamped are counted, across scans, and announced; the frames are integrated.
TEST(StoreGuards, ClampedValuesAreCountedAndAnnounced) {
  test::RecordingSink sink;
  Pipeline pipeline(test::small_config(), std::make_unique<ClampingBackend>(), sink);
  pipeline.start();
  const test::TestScan first = test::make_parallel_scan(91, {12, 40}, 24);
  test::begin_scan(pipeline, first);
  test::feed_phantom(pipeline, first, 0, 24);
  pipeline.wait_idle();
  EXPECT_EQ(pipeline.metrics().store_values_clamped, 3u * 24);
  EXPECT_GE(sink.events_with_reason(kStoreValuesClampedWarning), 1u);
  const std::vector<ServerEvent> events = sink.events();
  const auto warning = std::find_if(events.begin(), events.end(), [](const ServerEvent& e) {
    return e.reason == kStoreValuesClampedWarning;
  });
  ASSERT_NE(warning, events.end());
  EXPECT_EQ(warning->kind, EventKind::kWarning);
  EXPECT_NE(warning->message.find("--texels fp32"), std::string::npos) << warning->message;

  const test::TestScan second = test::make_parallel_scan(92, {12, 40}, 24);
  test::begin_scan(pipeline, second);
  test::feed_phantom(pipeline, second, 0, 10);
  pipeline.wait_idle();
  const MetricsSnapshot m = pipeline.metrics();
  EXPECT_EQ(m.store_values_clamped, 3u * 34) << "the second store counts from zero";
  EXPECT_EQ(m.projections_integrated, 34u);
}

}  // namespace
}  // namespace slicestream
