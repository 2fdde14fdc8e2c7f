// Slice refinement through the whole in-process pipeline (CPU backend) on a parallel-beam scan
// of the analytic phantom (raw uint16 counts with darks and flats): refined slices are published
// as their own stream, fit the data better than the FBP image they start from and are at least
// as close to the phantom; the FBP residual is reported; matrices are built once per slice and
// rebuilt when the rotation-axis offset changes; per-rotation mode refines completed rotations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using test::call;

constexpr double kPixelMm = 0.5;

class RefinementTest : public ::testing::Test {
 protected:
  void start(PipelineConfig config = test::small_config()) {
    pipeline_ = std::make_unique<Pipeline>(config, test::cpu_backend(), sink_);
    pipeline_->start();
  }
  void expect_ok(Command command) {
    const CommandReply reply = call(*pipeline_, std::move(command));
    EXPECT_EQ(reply.status.code, StatusCode::kOk) << reply.status.message;
  }
  StatusReport status() { return *call(*pipeline_, GetStatusCommand{}).report; }
  std::optional<RefinementStatus> refinement(std::uint32_t id) {
    for (const RefinementStatus& r : status().refinements) {
      if (r.slice_id == id) return r;
    }
    return std::nullopt;
  }
  // Waits for a refinement result of slice `id` that covers `projections` projections.
  bool wait_result(std::uint32_t id, std::uint64_t projections) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::optional<RefinementStatus> r = refinement(id);
      if (r && r->has_result && r->projections_integrated == projections) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  // Waits for a published refined image of slice `id` that covers `projections` projections
  // (the status is updated before the publication reaches the sink).
  bool wait_refined(std::uint32_t id, std::uint64_t projections) {
    return sink_.wait_for([&] { return last_refined(id, projections).has_value(); }, 60s);
  }
  std::optional<RefinedSliceImage> last_refined(std::uint32_t id, std::uint64_t projections) {
    std::optional<RefinedSliceImage> last;
    for (const RefinedSliceImage& r : sink_.refined()) {
      if (r.slice.slice_id == id && r.slice.projections_integrated == projections) last = r;
    }
    return last;
  }

  test::RecordingSink sink_;
  std::unique_ptr<Pipeline> pipeline_;
  test::TestScan scan_ =
      test::make_parallel_scan(31, {16, 64}, 90, PixelType::kUint16, 2, 2, kPixelMm);
};

TEST_F(RefinementTest, RefinedSlicesFitTheDataAndApproachThePhantom) {
  start();
  const std::vector<SetSliceCommand> slices = {
      test::axial_slice(scan_.description, 5, 64),  // the box's centre, between two rows
      test::axial_slice_at(6, 56, kPixelMm, 1.0, -1.5, 1.25, 0.6),  // off-centre, rotated, a row
      test::axial_slice(scan_.description, 7, 32),                  // residual only
  };
  for (const SetSliceCommand& slice : slices)
    expect_ok(slice);
  // Switched on before the scan: the rows are captured from its first projection on. Slice 5:
  // plain CGLS (it fits the data); slice 6: the default (FISTA, TV, x >= 0, discrepancy stop).
  expect_ok(SetRefinementCommand{5, true, 10, 0, plain_cgls_settings()});
  expect_ok(SetRefinementCommand{6, true, 10, 0, {}});
  expect_ok(SetRefinementCommand{7, true, 0, 0, {}});
  EXPECT_EQ(refinement(5)->state, "waiting_for_scan");

  const auto n = static_cast<std::uint32_t>(scan_.description.projections_per_rotation());
  const std::uint64_t total = n + n / 3;
  test::begin_scan(*pipeline_, scan_);
  test::feed_phantom(*pipeline_, scan_, 0, static_cast<std::uint32_t>(total));
  test::end_scan(*pipeline_, scan_, total);
  pipeline_->wait_idle();
  for (std::uint32_t id : {5u, 6u})
    ASSERT_TRUE(wait_refined(id, total)) << "slice " << id << " was not refined at the end";
  ASSERT_TRUE(wait_result(7, total)) << "the residual of slice 7 was not measured at the end";

  for (std::size_t i = 0; i < 2; ++i) {
    const SetSliceCommand& spec = slices[i];
    SCOPED_TRACE("slice " + std::to_string(spec.slice_id));
    const std::optional<RefinedSliceImage> refined = last_refined(spec.slice_id, total);
    ASSERT_TRUE(refined.has_value());
    const std::optional<SliceImage> fbp = sink_.last_slice(spec.slice_id);
    ASSERT_TRUE(fbp.has_value());
    ASSERT_EQ(fbp->projections_integrated, total);
    EXPECT_EQ(refined->slice.width, spec.width);
    EXPECT_EQ(refined->slice.orientation.values, spec.orientation.values);
    EXPECT_EQ(refined->slice.scan_id, scan_.description.scan_id);
    EXPECT_GE(refined->slice.sequence, 1u);
    EXPECT_EQ(refined->solver, "cpu csr fp32");
    // Plausible units: the FBP image explains the measured line integrals to a few percent.
    EXPECT_GT(refined->residual_before, 0.005);
    EXPECT_LT(refined->residual_before, 0.3);
    // The noise level of uint16 counts under a 39900-count open beam, in the report.
    const RefinementSummary& summary = refined->summary;
    EXPECT_GT(summary.noise_level, 0.0005);
    EXPECT_LT(summary.noise_level, 0.05);
    if (i == 0) {  // plain CGLS: every iteration, a much better fit
      EXPECT_EQ(refined->iterations, 10);
      EXPECT_LT(refined->residual_after, 0.7 * refined->residual_before);
      EXPECT_EQ(summary.method, "cgls");
      EXPECT_EQ(summary.regularizer, "none");
      EXPECT_EQ(summary.stop_reason, "max_iterations");
      EXPECT_EQ(summary.target_residual, 0);
    } else {  // the default: TV and x >= 0 trade some fit for the object, stopping at the noise
      // (0 when the FBP image, made non-negative, already explains the data to the noise level)
      EXPECT_LE(refined->iterations, 10);
      EXPECT_EQ(summary.method, "fista");
      EXPECT_EQ(summary.regularizer, "tv");
      EXPECT_DOUBLE_EQ(summary.weight, kDefaultTvWeight);
      EXPECT_TRUE(summary.non_negative);
      EXPECT_DOUBLE_EQ(summary.target_residual, summary.noise_level);
      EXPECT_TRUE(summary.stop_reason == "max_iterations" ||
                  (summary.stop_reason == "discrepancy" &&
                   refined->residual_after <= summary.target_residual))
          << summary.stop_reason;
      EXPECT_GE(*std::min_element(refined->slice.values.begin(), refined->slice.values.end()),
                0.0f);
    }
    const std::vector<float> truth =
        phantom::sample(scan_.phantom, slice_grid(spec.orientation, spec.width, spec.height), 3);
    const double fbp_error = test::relative_error(fbp->values, truth);
    const double refined_error = test::relative_error(refined->slice.values, truth);
    std::printf("slice %u: residual %.4f -> %.4f, error to the phantom %.4f (FBP) -> %.4f\n",
                spec.slice_id, refined->residual_before, refined->residual_after, fbp_error,
                refined_error);
    EXPECT_LE(refined_error, fbp_error);
    const RefinementStatus r = *refinement(spec.slice_id);
    EXPECT_EQ(r.state, "ready");
    EXPECT_EQ(r.window_filled, static_cast<int>(n));
    EXPECT_EQ(r.window_size, static_cast<int>(n));
    EXPECT_DOUBLE_EQ(r.fbp_residual, refined->residual_before);
    EXPECT_DOUBLE_EQ(r.refined_residual, refined->residual_after);
    EXPECT_EQ(r.summary.stop_reason, refined->summary.stop_reason);
    EXPECT_EQ(r.settings, i == 0 ? plain_cgls_settings() : RefinementSettings{});
  }
  const RefinementStatus residual_only = *refinement(7);
  EXPECT_TRUE(std::isfinite(residual_only.fbp_residual));
  EXPECT_GT(residual_only.fbp_residual, 0.005);
  EXPECT_LT(residual_only.fbp_residual, 0.3);
  EXPECT_EQ(residual_only.refined_residual, residual_only.fbp_residual);
  EXPECT_EQ(residual_only.iterations_run, 0);
  EXPECT_EQ(residual_only.summary.stop_reason, "residual_only");
  for (const RefinedSliceImage& r : sink_.refined())
    EXPECT_NE(r.slice.slice_id, 7u) << "a residual-only slice publishes no refined image";

  pipeline_->stop(/*drain=*/true);  // every refinement published and counted
  const MetricsSnapshot m = pipeline_->metrics();
  EXPECT_EQ(m.refinement_matrix_builds, 3u) << "one matrix per slice, reused";
  EXPECT_GE(m.refinements_run, 3u);
  EXPECT_EQ(m.refinement_us.count, m.refinements_run);
  EXPECT_EQ(m.refined_slices_published, sink_.refined().size());
  EXPECT_EQ(m.errors, 0u);
  EXPECT_TRUE(m.discards.empty());
  EXPECT_TRUE(m.requests_refused.empty());
}

// The reply names the scan whose window is refined and says when it refines: interval 0 is
// "whenever new projections have arrived" (not "every 0 s"); after the scan's end it does not
// promise projections that will not come.
TEST_F(RefinementTest, TheReplyQuotesTheCurrentScanAndASensibleInterval) {
  start();
  const auto n = static_cast<std::uint32_t>(scan_.description.projections_per_rotation());
  expect_ok(test::axial_slice(scan_.description, 5, 32));
  test::begin_scan(*pipeline_, scan_);
  test::feed_phantom(*pipeline_, scan_, 0, n / 2);
  pipeline_->wait_idle();
  const CommandReply running = call(*pipeline_, SetRefinementCommand{5, true, 4, 0, {}});
  ASSERT_EQ(running.status.code, StatusCode::kOk) << running.status.message;
  EXPECT_NE(running.status.message.find("whenever new projections have arrived"), std::string::npos)
      << running.status.message;
  EXPECT_EQ(running.status.message.find("every 0 s"), std::string::npos) << running.status.message;
  EXPECT_NE(running.status.message.find("of scan 31"), std::string::npos) << running.status.message;
  test::end_scan(*pipeline_, scan_, n / 2);
  pipeline_->wait_idle();
  expect_ok(test::axial_slice(scan_.description, 6, 32));
  const CommandReply ended = call(*pipeline_, SetRefinementCommand{6, true, 4, 2.5, {}});
  ASSERT_EQ(ended.status.code, StatusCode::kOk) << ended.status.message;
  EXPECT_NE(ended.status.message.find("at most every 2.5 s"), std::string::npos)
      << ended.status.message;
  EXPECT_NE(ended.status.message.find("scan 31 has ended"), std::string::npos)
      << ended.status.message;
  EXPECT_EQ(ended.status.message.find("collecting"), std::string::npos) << ended.status.message;
}

TEST_F(RefinementTest, FollowsPerRotationModeAndTheRotationAxisOffset) {
  start();
  // Only the refined slice: no default slices (whose residual checks build matrices too).
  for (std::uint32_t id = 0; id < kDefaultSliceCount; ++id)
    expect_ok(RemoveSliceCommand{id});
  const SetSliceCommand slice = test::axial_slice(scan_.description, 4, 48);
  expect_ok(slice);
  SetParametersCommand per_rotation;
  per_rotation.window_mode = WindowMode::kPerRotation;
  expect_ok(per_rotation);
  // The scan's rotation axis really projects 1.5 columns right of the detector centre.
  const ScanGeometry measured = with_rotation_axis_offset(scan_.description.geometry, 1.5);
  const auto n = static_cast<std::uint32_t>(scan_.description.projections_per_rotation());
  auto feed = [&](std::uint32_t first, std::uint32_t count) {
    for (std::uint32_t i = first; i < first + count; ++i)
      ASSERT_TRUE(pipeline_->submit(test::make_phantom_frame(scan_, i, measured.vectors[i % n])));
    pipeline_->wait_idle();
  };
  test::begin_scan(*pipeline_, scan_);
  pipeline_->wait_idle();                              // commands overtake the data path
  expect_ok(SetRefinementCommand{4, true, 5, 0, {}});  // during the scan
  feed(0, 2 * n);
  ASSERT_TRUE(wait_refined(4, 2 * n));
  // Only completed rotations are refined: their FBP image is what the window holds.
  for (const RefinedSliceImage& r : sink_.refined())
    EXPECT_EQ(r.slice.projections_integrated % n, 0u);
  const std::uint64_t builds = pipeline_->metrics().refinement_matrix_builds;
  EXPECT_EQ(builds, 1u);
  const std::optional<RefinedSliceImage> wrong = last_refined(4, 2 * n);
  ASSERT_TRUE(wrong.has_value());

  // The offset correction changes the matrix (rebuilt), not the sinogram window, and the model
  // now fits the data.
  SetParametersCommand offset;
  offset.rotation_axis_offset_px = 1.5;
  expect_ok(offset);
  EXPECT_EQ(refinement(4)->window_filled, static_cast<int>(n));
  feed(2 * n, n);
  ASSERT_TRUE(wait_refined(4, 3 * n));
  EXPECT_EQ(pipeline_->metrics().refinement_matrix_builds, builds + 1);
  const std::optional<RefinedSliceImage> corrected = last_refined(4, 3 * n);
  ASSERT_TRUE(corrected.has_value());
  std::printf("FBP residual: %.4f without the offset correction, %.4f with it\n",
              wrong->residual_before, corrected->residual_before);
  EXPECT_LT(corrected->residual_before, 0.8 * wrong->residual_before);

  // Switched off: no more refinements.
  expect_ok(SetRefinementCommand{4, false, 0, 0, {}});
  EXPECT_TRUE(status().refinements.empty());
  const std::size_t published = sink_.refined().size();
  feed(3 * n, n);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(sink_.refined().size(), published);
  EXPECT_EQ(pipeline_->metrics().errors, 0u);
}

TEST_F(RefinementTest, ConeBeamCentralSliceIsRefinedAsAFanBeamProblem) {
  start();
  // FleX-ray-like: 360 degrees, raw counts with darks and flats, FDK; the source plane is z = 0.
  const test::TestScan cone = test::make_cone_scan(61, {16, 64}, 90, 150, 100);
  const SetSliceCommand central = test::axial_slice(cone.description, 2, 48);
  expect_ok(central);
  expect_ok(test::axial_slice_at(3, 48, 0.8, 0, 0, 1.5));  // above the source plane
  expect_ok(SetRefinementCommand{2, true, 10, 0, plain_cgls_settings()});
  const auto n = static_cast<std::uint32_t>(cone.description.projections_per_rotation());
  const std::uint64_t total = n + n / 3;
  test::begin_scan(*pipeline_, cone);
  pipeline_->wait_idle();
  const CommandReply refused = call(*pipeline_, SetRefinementCommand{3, true, 10, 0, {}});
  EXPECT_EQ(refused.status.code, StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status.reason, "not_central_slice") << refused.status.message;
  test::feed_phantom(*pipeline_, cone, 0, static_cast<std::uint32_t>(total));
  test::end_scan(*pipeline_, cone, total);
  pipeline_->wait_idle();
  ASSERT_TRUE(wait_refined(2, total)) << "the central slice was not refined";

  const RefinedSliceImage refined = *last_refined(2, total);
  const std::optional<SliceImage> fbp = sink_.last_slice(2);
  ASSERT_TRUE(fbp.has_value());
  EXPECT_EQ(refined.solver, "cpu csr fp32");
  // The FDK image explains the (cosine weight removed) line integrals of the central rows to a
  // few percent, and CGLS on the fan-beam matrix fits them better.
  EXPECT_GT(refined.residual_before, 0.005);
  EXPECT_LT(refined.residual_before, 0.3);
  EXPECT_LT(refined.residual_after, 0.7 * refined.residual_before);
  const std::vector<float> truth = phantom::sample(
      cone.phantom, slice_grid(central.orientation, central.width, central.height), 3);
  const double fbp_error = test::relative_error(fbp->values, truth);
  const double refined_error = test::relative_error(refined.slice.values, truth);
  std::printf(
      "cone central slice: residual %.4f -> %.4f, error to the phantom %.4f (FDK) -> %.4f\n",
      refined.residual_before, refined.residual_after, fbp_error, refined_error);
  EXPECT_LE(refined_error, fbp_error);
  // The slice above the source plane is not checked automatically either, and says why.
  for (const SliceResidual& r : status().residuals) {
    if (r.slice_id == 3) {
      EXPECT_EQ(r.reason, "not_central_slice");
    }
  }
  EXPECT_EQ(pipeline_->metrics().errors, 0u);
}

}  // namespace
}  // namespace slicestream
