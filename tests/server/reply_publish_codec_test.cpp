// Outbound codecs: replies (status report, slice, parameters, errors) and publications (slice,
// preview, event, refined slice) survive serialisation with every field; payloads are not copied
// when moved.
#include <gtest/gtest.h>

#include <cstring>

#include "server/codec/publish_codec.hpp"
#include "server/codec/reply_codec.hpp"
#include "tests/server/wire_builders.hpp"

namespace slicestream {
namespace {

using test::Random;

template <typename Message>
Message through_wire(const Message& message) {
  Message parsed;
  EXPECT_TRUE(parsed.ParseFromString(message.SerializeAsString()));
  return parsed;
}

SliceImage random_slice(Random& random) {
  SliceImage slice;
  slice.slice_id = random.integer(0, 100);
  for (float& v : slice.orientation.values)
    v = static_cast<float>(random.uniform(-5, 5));
  slice.width = static_cast<int>(random.integer(1, 20));
  slice.height = static_cast<int>(random.integer(1, 20));
  slice.scan_id = random.integer(1, 1000);
  slice.projections_integrated = random.integer(1, 100000);
  slice.newest_detector_timestamp_ns = random.integer(1, 1u << 31);
  slice.newest_arrival_ns = random.integer(1, 1u << 31);
  slice.sequence = random.integer(1, 1000);
  slice.values.resize(static_cast<std::size_t>(slice.width * slice.height));
  for (float& v : slice.values)
    v = static_cast<float>(random.uniform(-1, 1));
  return slice;
}

void expect_slice_header(const v1::SliceHeader& wire, const SliceImage& slice,
                         std::uint64_t published_ns) {
  EXPECT_EQ(wire.slice_id(), slice.slice_id);
  ASSERT_EQ(wire.orientation().values_size(), 9);
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(wire.orientation().values(i), slice.orientation.values[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(wire.width(), static_cast<std::uint32_t>(slice.width));
  EXPECT_EQ(wire.height(), static_cast<std::uint32_t>(slice.height));
  EXPECT_EQ(wire.projections_integrated(), slice.projections_integrated);
  EXPECT_EQ(wire.scan_id(), slice.scan_id);
  EXPECT_EQ(wire.sequence(), slice.sequence);
  EXPECT_EQ(wire.detector_timestamp_ns(), slice.newest_detector_timestamp_ns);
  EXPECT_EQ(wire.arrival_ns(), slice.newest_arrival_ns);
  EXPECT_EQ(wire.published_ns(), published_ns);
}

TEST(ReplyCodec, StatusReport) {
  StatusReport report;
  report.backend = "cpu";
  report.backend_device = "test CPU";
  report.scan_active = true;
  report.scan_id = 12;
  report.scan_state = ScanState::kReconstructing;
  report.scan = ScanSummary{{{-2, -3, -4}, {2, 3, 5}}, BeamKind::kCone, 40, 60, 150, "phantom"};
  report.memory = {1u << 30, 5u << 20, 3u << 20};
  SetSliceCommand slice;
  slice.slice_id = 4;
  slice.orientation.values = {1, 0, 0, 0, 1, 0, -0.5f, -0.5f, 0};
  slice.width = 64;
  slice.height = 48;
  report.slices = {slice};
  report.parameters.filter = {FilterWindow::kHamming, 0.8f};
  report.parameters.window_mode = WindowMode::kPerRotation;
  report.parameters.rotation_axis_offset_px = 1.5;
  report.parameters.publish_rate_hz = 20;
  report.parameters.preview_interval_s = 2;
  report.metrics.uptime_s = 3.5;
  StageMetrics stage;
  stage.name = "filter";
  stage.items = 100;
  stage.rate_per_s = 83.5;
  stage.busy_fraction = 0.4;
  stage.service_us = {100, 1000, 2000, 3000};
  stage.queue_depth = 3;
  stage.queue_capacity = 64;
  report.metrics.stages = {stage};
  report.metrics.frames_received = 120;
  report.metrics.projections_integrated = 100;
  report.metrics.discards = {{"bad_payload_size", 2}, {"no_active_scan", 5}};
  report.metrics.frame_to_slice_us = {90, 5000, 9000, 12000};
  report.metrics.refinements_run = 6;
  report.metrics.refinement_us = {6, 30000, 45000, 50000};
  report.metrics.requests_refused = {{"not_axial", 2}};
  RefinementStatus collecting;
  collecting.slice_id = 4;
  collecting.iterations = 10;
  collecting.interval_s = 0.5;
  collecting.state = "collecting";
  collecting.window_filled = 30;
  collecting.window_size = 90;
  RefinementStatus refined = collecting;
  refined.slice_id = 5;
  refined.state = "ready";
  refined.has_result = true;
  refined.fbp_residual = 0.03;
  refined.refined_residual = 0.004;
  refined.iterations_run = 10;
  refined.projections_integrated = 180;
  refined.solver = "cpu csr fp32";
  refined.settings.regularizer = solvers::Regularizer::kTikhonov;
  refined.settings.stop = RefinementStopRule::kIterations;
  refined.summary = {"fista", "tikhonov", 0.01, true, "max_iterations", -1, 0};
  report.refinements = {collecting, refined};
  SliceResidual unchecked;
  unchecked.slice_id = 1;
  unchecked.source = "check";
  unchecked.interval_s = 3;
  unchecked.state = "unavailable";
  unchecked.reason = "not_axial";
  unchecked.detail = "slice 1 is not axial";
  SliceResidual checked;
  checked.slice_id = 4;
  checked.source = "check";
  checked.interval_s = 3;
  checked.state = "ready";
  checked.has_residual = true;
  checked.residual = 0.025;
  checked.scan_id = 12;
  checked.projections_integrated = 150;
  checked.window_size = 90;
  checked.age_s = 1.25;
  report.residuals = {unchecked, checked};
  report.metrics.residual_checks_run = 11;
  report.metrics.publications_coalesced = 13;
  report.metrics.residual_check_us = {11, 4000, 9000, 9500};
  CommandReply reply;
  reply.report = report;

  const v1::Reply wire = through_wire(encode_reply(77, reply, 0, {{"requests", 9}}));
  EXPECT_EQ(wire.protocol_version(), 1u);
  EXPECT_EQ(wire.request_id(), 77u);
  EXPECT_EQ(wire.code(), v1::STATUS_CODE_OK);
  ASSERT_TRUE(wire.has_status());
  const v1::StatusReport& status = wire.status();
  EXPECT_EQ(status.backend(), "cpu");
  EXPECT_EQ(status.backend_device(), "test CPU");
  EXPECT_TRUE(status.scan_active());
  EXPECT_EQ(status.scan_id(), 12u);
  EXPECT_EQ(status.scan_state(), "reconstructing");
  ASSERT_EQ(status.slices_size(), 1);
  EXPECT_EQ(status.slices(0).slice_id(), 4u);
  EXPECT_EQ(status.slices(0).width(), 64u);
  EXPECT_EQ(status.slices(0).orientation().values(6), -0.5f);
  EXPECT_EQ(status.parameters().filter(), v1::FILTER_WINDOW_HAMMING);
  EXPECT_EQ(status.parameters().filter_cutoff(), 0.8f);
  EXPECT_EQ(status.parameters().window_mode(), v1::WINDOW_MODE_PER_ROTATION);
  EXPECT_EQ(status.parameters().rotation_axis_offset_px(), 1.5);
  EXPECT_EQ(status.parameters().publish_rate_hz(), 20);
  EXPECT_EQ(status.parameters().preview_interval_s(), 2);
  EXPECT_EQ(status.uptime_s(), 3.5);
  ASSERT_EQ(status.stages_size(), 1);
  EXPECT_EQ(status.stages(0).name(), "filter");
  EXPECT_EQ(status.stages(0).items(), 100u);
  EXPECT_EQ(status.stages(0).rate_per_s(), 83.5);
  EXPECT_EQ(status.stages(0).busy_fraction(), 0.4);
  EXPECT_EQ(status.stages(0).service().p99_us(), 2000);
  EXPECT_EQ(status.stages(0).queue_depth(), 3u);
  EXPECT_EQ(status.stages(0).queue_capacity(), 64u);
  EXPECT_EQ(status.discards().at("bad_payload_size"), 2u);
  EXPECT_EQ(status.discards().at("no_active_scan"), 5u);
  EXPECT_EQ(status.counters().at("frames_received"), 120u);
  EXPECT_EQ(status.counters().at("projections_integrated"), 100u);
  EXPECT_EQ(status.counters().at("requests"), 9u);
  EXPECT_EQ(status.frame_to_slice().count(), 90u);
  EXPECT_EQ(status.frame_to_slice().p50_us(), 5000);
  EXPECT_EQ(status.frame_to_slice().max_us(), 12000);
  EXPECT_EQ(status.counters().at("refinements_run"), 6u);
  EXPECT_EQ(status.refinement().p50_us(), 30000);
  EXPECT_EQ(status.requests_refused().at("not_axial"), 2u);
  ASSERT_EQ(status.refinements_size(), 2);
  EXPECT_EQ(status.refinements(0).state(), "collecting");
  EXPECT_EQ(status.refinements(0).window_filled(), 30u);
  EXPECT_FALSE(status.refinements(0).has_fbp_residual()) << "no result yet: absent, not 0";
  EXPECT_EQ(status.refinements(1).slice_id(), 5u);
  EXPECT_EQ(status.refinements(1).fbp_residual(), 0.03);
  EXPECT_EQ(status.refinements(1).refined_residual(), 0.004);
  EXPECT_EQ(status.refinements(1).projections_integrated(), 180u);
  EXPECT_EQ(status.refinements(1).solver(), "cpu csr fp32");
  ASSERT_EQ(status.residuals_size(), 2);
  EXPECT_EQ(status.residuals(0).slice_id(), 1u);
  EXPECT_EQ(status.residuals(0).state(), "unavailable");
  EXPECT_EQ(status.residuals(0).reason(), "not_axial");
  EXPECT_EQ(status.residuals(0).detail(), "slice 1 is not axial");
  EXPECT_FALSE(status.residuals(0).has_residual()) << "never measured: absent, not 0";
  EXPECT_EQ(status.residuals(1).source(), "check");
  EXPECT_EQ(status.residuals(1).interval_s(), 3);
  EXPECT_EQ(status.residuals(1).residual(), 0.025);
  EXPECT_EQ(status.residuals(1).scan_id(), 12u);
  EXPECT_EQ(status.residuals(1).projections_integrated(), 150u);
  EXPECT_EQ(status.residuals(1).window_size(), 90u);
  EXPECT_EQ(status.residuals(1).age_s(), 1.25);
  EXPECT_EQ(status.counters().at("residual_checks_run"), 11u);
  EXPECT_EQ(status.counters().at("publications_coalesced"), 13u);
  EXPECT_EQ(status.residual_check().p99_us(), 9000);
  ASSERT_TRUE(status.has_scan());
  EXPECT_EQ(status.scan().volume().min_mm().y(), -3);
  EXPECT_EQ(status.scan().volume().max_mm().z(), 5);
  EXPECT_EQ(status.scan().beam(), "cone");
  EXPECT_EQ(status.scan().detector_rows(), 40u);
  EXPECT_EQ(status.scan().detector_cols(), 60u);
  EXPECT_EQ(status.scan().projections_per_rotation(), 150u);
  EXPECT_EQ(status.scan().description(), "phantom");
  EXPECT_EQ(status.memory().total_bytes(), 1u << 30);
  EXPECT_EQ(status.memory().used_by_scan_bytes(), 5u << 20);
  EXPECT_EQ(status.memory().used_by_refiners_bytes(), 3u << 20);
}

TEST(ReplyCodec, StatusReportBeforeAnyScanHasNoScan) {
  v1::StatusReport wire;
  encode_status_report(StatusReport{}, {}, &wire);
  EXPECT_FALSE(wire.has_scan());
}

TEST(ReplyCodec, SliceParametersAndErrors) {
  Random random;
  SCOPED_TRACE(random.seed);
  const SliceImage slice = random_slice(random);
  CommandReply slice_reply;
  slice_reply.slice = slice;
  v1::Reply wire = through_wire(encode_reply(3, slice_reply, 555, {}));
  ASSERT_TRUE(wire.has_slice());
  expect_slice_header(wire.slice(), slice, 555);

  Parameters parameters;
  parameters.filter = {FilterWindow::kCosine, 0.9f};
  CommandReply parameter_reply;
  parameter_reply.parameters = parameters;
  wire = through_wire(encode_reply(4, parameter_reply, 0, {}));
  ASSERT_TRUE(wire.has_parameters());
  EXPECT_EQ(wire.parameters().filter(), v1::FILTER_WINDOW_COSINE);
  EXPECT_EQ(wire.parameters().filter_cutoff(), 0.9f);
  EXPECT_EQ(wire.parameters().window_mode(), v1::WINDOW_MODE_SLIDING);

  for (auto [code, wire_code] :
       {std::pair{StatusCode::kNotFound, v1::STATUS_CODE_NOT_FOUND},
        std::pair{StatusCode::kFailedPrecondition, v1::STATUS_CODE_FAILED_PRECONDITION},
        std::pair{StatusCode::kResourceExhausted, v1::STATUS_CODE_RESOURCE_EXHAUSTED},
        std::pair{StatusCode::kUnavailable, v1::STATUS_CODE_UNAVAILABLE},
        std::pair{StatusCode::kInternal, v1::STATUS_CODE_INTERNAL}}) {
    CommandReply failed;
    failed.status = {code, "it failed"};
    wire = through_wire(encode_reply(5, failed, 0, {}));
    EXPECT_EQ(wire.code(), wire_code);
    EXPECT_EQ(wire.message(), "it failed");
    EXPECT_EQ(wire.body_case(), v1::Reply::BODY_NOT_SET);
  }

  CommandReply refused;
  refused.status = {StatusCode::kInvalidArgument, "slice 3 is not axial", "not_axial"};
  wire = through_wire(encode_reply(6, refused, 0, {}));
  EXPECT_EQ(wire.code(), v1::STATUS_CODE_INVALID_ARGUMENT);
  EXPECT_EQ(wire.reason(), "not_axial") << "the pipeline's reason reaches the client";

  wire = through_wire(encode_error_reply(0, invalid("undecodable_request", "not a Request")));
  EXPECT_EQ(wire.request_id(), 0u);
  EXPECT_EQ(wire.code(), v1::STATUS_CODE_INVALID_ARGUMENT);
  EXPECT_EQ(wire.reason(), "undecodable_request");
  EXPECT_EQ(wire.message(), "not a Request");
}

TEST(PublishCodec, SlicePreviewEvent) {
  Random random;
  SCOPED_TRACE(random.seed);
  const SliceImage slice = random_slice(random);
  v1::PublishHeader wire = through_wire(encode_slice(slice, 999));
  EXPECT_EQ(wire.protocol_version(), 1u);
  ASSERT_TRUE(wire.has_slice());
  expect_slice_header(wire.slice(), slice, 999);

  PreviewVolume preview;
  preview.scan_id = 5;
  preview.box = {{-1, -2, -3}, {4, 5, 6}};
  preview.size_x = 4;
  preview.size_y = 5;
  preview.size_z = 6;
  preview.projections_integrated = 321;
  preview.sequence = 8;
  wire = through_wire(encode_preview(preview, 1000));
  ASSERT_TRUE(wire.has_preview());
  EXPECT_EQ(wire.preview().scan_id(), 5u);
  EXPECT_EQ(wire.preview().volume().min_mm().y(), -2);
  EXPECT_EQ(wire.preview().volume().max_mm().z(), 6);
  EXPECT_EQ(wire.preview().size_x(), 4u);
  EXPECT_EQ(wire.preview().size_y(), 5u);
  EXPECT_EQ(wire.preview().size_z(), 6u);
  EXPECT_EQ(wire.preview().projections_integrated(), 321u);
  EXPECT_EQ(wire.preview().sequence(), 8u);
  EXPECT_EQ(wire.preview().published_ns(), 1000u);

  for (auto [kind, wire_kind] : {std::pair{EventKind::kScanStarted, v1::EVENT_KIND_SCAN_STARTED},
                                 std::pair{EventKind::kScanEnded, v1::EVENT_KIND_SCAN_ENDED},
                                 std::pair{EventKind::kError, v1::EVENT_KIND_ERROR},
                                 std::pair{EventKind::kWarning, v1::EVENT_KIND_WARNING}}) {
    wire = through_wire(encode_event({kind, 11, "bad_shape", "frame 3 has 2 rows"}, 1234));
    ASSERT_TRUE(wire.has_event());
    EXPECT_EQ(wire.event().kind(), wire_kind);
    EXPECT_EQ(wire.event().scan_id(), 11u);
    EXPECT_EQ(wire.event().reason(), "bad_shape");
    EXPECT_EQ(wire.event().message(), "frame 3 has 2 rows");
    EXPECT_EQ(wire.event().time_ns(), 1234u);
  }
}

TEST(PublishCodec, RefinedSlice) {
  Random random;
  SCOPED_TRACE(random.seed);
  RefinedSliceImage refined;
  refined.slice = random_slice(random);
  refined.iterations = 12;
  refined.residual_before = 0.031;
  refined.residual_after = 0.004;
  refined.duration_ms = 35.5;
  refined.solver = "cpu csr fp32";
  refined.summary = {"fista", "tv", 0.001, true, "discrepancy", 0.0213, 0.0426};
  const v1::PublishHeader wire = through_wire(encode_refined(refined, 4321));
  ASSERT_TRUE(wire.has_refined());
  expect_slice_header(wire.refined().slice(), refined.slice, 4321);
  EXPECT_EQ(wire.refined().iterations(), 12u);
  EXPECT_EQ(wire.refined().residual_before(), 0.031);
  EXPECT_EQ(wire.refined().residual_after(), 0.004);
  EXPECT_EQ(wire.refined().duration_ms(), 35.5);
  EXPECT_EQ(wire.refined().solver(), "cpu csr fp32");
  const v1::RefinementSummary& summary = wire.refined().summary();
  EXPECT_EQ(summary.method(), "fista");
  EXPECT_EQ(summary.regularizer(), "tv");
  EXPECT_EQ(summary.weight(), 0.001);
  EXPECT_TRUE(summary.non_negative());
  EXPECT_EQ(summary.stop_reason(), "discrepancy");
  EXPECT_EQ(summary.noise_level(), 0.0213);
  EXPECT_EQ(summary.target_residual(), 0.0426);
  refined.summary.noise_level = -1;  // unknown: absent on the wire
  EXPECT_FALSE(through_wire(encode_refined(refined, 1)).refined().summary().has_noise_level());
  // No topic is a prefix of another: subscribers of "slice" never receive refined slices.
  for (const char* a : {kSliceTopic, kPreviewTopic, kEventTopic, kRefinedTopic}) {
    for (const char* b : {kSliceTopic, kPreviewTopic, kEventTopic, kRefinedTopic}) {
      if (a == b) continue;
      EXPECT_NE(std::string(b).rfind(a, 0), 0u) << a << " prefixes " << b;
    }
  }
}

TEST(PublishCodec, PayloadMessages) {
  Random random;
  std::vector<float> values(1000);
  for (float& v : values)
    v = static_cast<float>(random.uniform(-1, 1));
  const std::vector<float> expected = values;

  zmq::message_t copied = payload_message(values);
  ASSERT_EQ(copied.size(), values.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(copied.data(), expected.data(), copied.size()), 0);

  const float* buffer = values.data();
  zmq::message_t moved = payload_message(std::move(values));
  EXPECT_EQ(moved.data(), static_cast<const void*>(buffer)) << "moved values were copied";
  EXPECT_EQ(std::memcmp(moved.data(), expected.data(), moved.size()), 0);
  EXPECT_EQ(payload_message(std::vector<float>{}).size(), 0u);
}

}  // namespace
}  // namespace slicestream
