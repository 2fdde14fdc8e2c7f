// Automatic data-consistency checks (RefinementLimits::residual_interval_s) through the whole
// in-process pipeline (CPU backend) on a parallel-beam phantom scan: every live axial slice gets
// its residual ||A x_fbp - b|| / ||b|| in the status and the metrics without any SetRefinement,
// equal to what a residual-only refinement of the same slice measures; the matrix is built once
// per slice, not per check; slices that cannot be checked say why; a moved or removed slice
// drops its residual; interval 0 switches the checks off.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <thread>

#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using test::call;

constexpr double kPixelMm = 0.5;

class ResidualCheckTest : public ::testing::Test {
 protected:
  void start(double interval_s) {
    PipelineConfig config = test::small_config();
    config.refinement.residual_interval_s = interval_s;
    // A 512 x 512 slice (~200 MiB) is over it; two 32 x 32 slices (~2.5 MiB each) are not.
    config.refinement.max_matrix_bytes = std::size_t{16} << 20;
    pipeline_ = std::make_unique<Pipeline>(config, test::cpu_backend(), sink_);
    pipeline_->start();
  }
  void expect_ok(Command command) {
    const CommandReply reply = call(*pipeline_, std::move(command));
    EXPECT_EQ(reply.status.code, StatusCode::kOk) << reply.status.message;
  }
  std::vector<SliceResidual> residuals() {
    return call(*pipeline_, GetStatusCommand{}).report->residuals;
  }
  std::optional<SliceResidual> residual(std::uint32_t id) {
    for (const SliceResidual& r : residuals()) {
      if (r.slice_id == id) return r;
    }
    return std::nullopt;
  }
  // Waits until the automatic checks of `ids` are armed (they capture their rows only from then
  // until the check starts), so that the projections fed next fill their windows.
  bool wait_armed(std::initializer_list<std::uint32_t> ids) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      bool all = true;
      for (std::uint32_t id : ids) {
        const std::optional<SliceResidual> r = residual(id);
        all = all && r && r->state == "collecting";
      }
      if (all) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
  // Waits for a residual of slice `id` measured on the FBP image of `projections` projections.
  bool wait_residual(std::uint32_t id, std::uint64_t projections) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::optional<SliceResidual> r = residual(id);
      if (r && r->has_residual && r->projections_integrated == projections) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  test::RecordingSink sink_;
  std::unique_ptr<Pipeline> pipeline_;
  test::TestScan scan_ =
      test::make_parallel_scan(51, {16, 64}, 60, PixelType::kUint16, 2, 2, kPixelMm);
};

TEST_F(ResidualCheckTest, LiveAxialSlicesAreCheckedWithoutSetRefinement) {
  start(0.05);
  const SetSliceCommand checked = test::axial_slice(scan_.description, 1, 32);
  SetSliceCommand twin = checked;  // the same slice, its residual measured by a refinement
  twin.slice_id = 4;
  const SetSliceCommand moved = test::axial_slice_at(5, 32, kPixelMm, 1.0, -0.5, 1.25, 0.3);
  for (const SetSliceCommand& slice :
       {checked, test::oblique_slice(scan_.description, 2, 32),
        test::axial_slice_at(3, 32, kPixelMm, 0, 0, 6.0),  // above the 8 mm detector
        twin, moved, test::axial_slice(scan_.description, 6, 512)}) {
    expect_ok(slice);
  }
  expect_ok(SetRefinementCommand{4, true, 0, 0, {}});
  EXPECT_EQ(residual(1)->state, "waiting_for_scan");
  EXPECT_EQ(residual(1)->source, "check");
  EXPECT_EQ(residual(4)->source, "refinement");

  const auto n = static_cast<std::uint32_t>(scan_.description.projections_per_rotation());
  test::begin_scan(*pipeline_, scan_);
  test::feed_phantom(*pipeline_, scan_, 0, n);
  pipeline_->wait_idle();
  ASSERT_TRUE(wait_residual(1, n)) << "slice 1 was not checked after one rotation";
  ASSERT_TRUE(wait_residual(5, n));
  // Between checks the rows are not captured ("waiting"); armed again after the interval, a check
  // measures the next full window.
  ASSERT_TRUE(wait_armed({1, 5}));
  const std::uint64_t total = 2 * n;
  test::feed_phantom(*pipeline_, scan_, n, total - n);
  test::end_scan(*pipeline_, scan_, total);
  pipeline_->wait_idle();
  for (std::uint32_t id : {1u, 4u, 5u})
    ASSERT_TRUE(wait_residual(id, total)) << "slice " << id << " was not measured at the end";

  // Plausible: the FBP image explains the measured line integrals to a few percent, and the
  // automatic check measures what a residual-only refinement of the same slice measures.
  const SliceResidual r = *residual(1);
  // Between checks: waiting for the next one, or armed and collecting its window.
  EXPECT_TRUE(r.state == "waiting" || r.state == "collecting") << r.state;
  EXPECT_TRUE(r.reason.empty()) << r.reason;
  EXPECT_EQ(r.scan_id, scan_.description.scan_id);
  EXPECT_EQ(r.window_size, static_cast<int>(n));
  EXPECT_EQ(r.interval_s, 0.05);
  EXPECT_GE(r.age_s, 0);
  EXPECT_LT(r.age_s, 60);
  EXPECT_GT(r.residual, 0.005);
  EXPECT_LT(r.residual, 0.3);
  EXPECT_NEAR(r.residual, residual(4)->residual, 1e-6 * r.residual);
  std::printf("slice 1: residual %.4f after %llu projections\n", r.residual,
              static_cast<unsigned long long>(r.projections_integrated));

  // Slices that cannot be checked say why.
  EXPECT_EQ(residual(2)->state, "unavailable");
  EXPECT_EQ(residual(2)->reason, "not_axial");
  EXPECT_EQ(residual(3)->reason, "slice_outside_detector");
  EXPECT_EQ(residual(6)->reason, "matrix_too_large");
  EXPECT_FALSE(residual(6)->detail.empty());
  for (std::uint32_t id : {2u, 3u, 6u})
    EXPECT_FALSE(residual(id)->has_residual) << id;

  // One matrix per checked slice however often it was checked; the metrics carry the residuals.
  MetricsSnapshot m = pipeline_->metrics();
  EXPECT_GE(m.residual_checks_run, 4u) << "two slices, after one and 1.5 rotations";
  EXPECT_EQ(m.refinement_matrix_builds, 2u)
      << "slices 1 and 4 (refined) share one (refiner_sharing.hpp), slice 5 has its own";
  EXPECT_GE(m.refinements_run, 2u) << "the checks are not counted as refinements";
  EXPECT_EQ(m.residual_check_us.count, m.residual_checks_run);
  ASSERT_EQ(m.slice_residuals.count(1), 1u);
  EXPECT_EQ(m.slice_residuals.at(1), r.residual);
  EXPECT_EQ(m.slice_residuals.count(2), 0u);
  EXPECT_TRUE(sink_.refined().empty()) << "residuals publish no refined images";

  // A moved slice drops its residual (and is checked again where it now is); a removed one
  // leaves the status and the metrics.
  expect_ok(test::axial_slice_at(5, 32, kPixelMm, -1.0, 0.5, -1.25, 0.3));
  EXPECT_FALSE(residual(5)->has_residual);
  expect_ok(RemoveSliceCommand{1});
  EXPECT_FALSE(residual(1).has_value());
  m = pipeline_->metrics();
  EXPECT_EQ(m.slice_residuals.count(1), 0u);
  EXPECT_EQ(m.slice_residuals.count(5), 0u);
  EXPECT_EQ(m.slice_residuals.count(4), 1u);
  EXPECT_EQ(m.errors, 0u);
  EXPECT_TRUE(m.discards.empty());
}

TEST_F(ResidualCheckTest, IntervalZeroSwitchesTheChecksOff) {
  start(0);
  const auto n = static_cast<std::uint32_t>(scan_.description.projections_per_rotation());
  test::begin_scan(*pipeline_, scan_);  // the default slices: two vertical, one axial
  test::feed_phantom(*pipeline_, scan_, 0, n + 5);
  test::end_scan(*pipeline_, scan_, n + 5);
  pipeline_->wait_idle();
  std::this_thread::sleep_for(50ms);
  const std::vector<SliceResidual> all = residuals();
  ASSERT_EQ(all.size(), 3u);
  for (const SliceResidual& r : all) {
    EXPECT_EQ(r.state, "off") << r.slice_id;
    EXPECT_EQ(r.reason, "checks_off") << r.slice_id;
    EXPECT_FALSE(r.has_residual) << r.slice_id;
  }
  const MetricsSnapshot m = pipeline_->metrics();
  EXPECT_EQ(m.residual_checks_run, 0u);
  EXPECT_EQ(m.refinement_matrix_builds, 0u);
  EXPECT_TRUE(m.slice_residuals.empty());
}

TEST_F(ResidualCheckTest, TheDefaultAxialSliceIsCheckedByDefault) {
  EXPECT_GT(PipelineConfig{}.refinement.residual_interval_s, 0) << "on unless switched off";
  start(PipelineConfig{}.refinement.residual_interval_s);
  const auto n = static_cast<std::uint32_t>(scan_.description.projections_per_rotation());
  test::begin_scan(*pipeline_, scan_);  // the default slices: two vertical, one axial
  test::feed_phantom(*pipeline_, scan_, 0, n);
  pipeline_->wait_idle();
  ASSERT_TRUE(wait_residual(2, n)) << "the default axial slice (id 2) was not checked";
  EXPECT_GT(residual(2)->residual, 0.005);
  EXPECT_LT(residual(2)->residual, 0.3);
  for (std::uint32_t id : {0u, 1u}) {
    EXPECT_EQ(residual(id)->state, "unavailable") << id;
    EXPECT_EQ(residual(id)->reason, "not_axial") << id;
  }
  EXPECT_EQ(pipeline_->metrics().errors, 0u);
}

// Axial slices of one in-plane frame at different heights of a parallel-beam scan pose one 2D
// problem: they share one system matrix (refiner_sharing.hpp), whether checked or refined, and
// count once in the checks' matrix budget (a refined problem not at all); a slice of another
// frame needs its own.
TEST_F(ResidualCheckTest, SlicesOfOneProblemShareOneMatrix) {
  const SetSliceCommand low = test::axial_slice_at(1, 32, kPixelMm, 0.5, -0.5, -1.0);
  RefinementPlan plan;
  ASSERT_FALSE(plan_refinement(low, scan_.description.geometry, &plan));
  const std::size_t one_matrix =
      estimated_matrix_bytes(refinement_setup(plan, scan_.description.geometry));
  PipelineConfig config = test::small_config();
  config.refinement.residual_interval_s = 0.05;
  config.refinement.max_matrix_bytes = one_matrix + one_matrix / 2;  // one matrix for checks
  pipeline_ = std::make_unique<Pipeline>(config, test::cpu_backend(), sink_);
  pipeline_->start();
  expect_ok(low);
  expect_ok(test::axial_slice_at(2, 32, kPixelMm, 0.5, -0.5, 1.25));      // same frame, higher
  expect_ok(test::axial_slice_at(3, 32, kPixelMm, 0.5, -0.5, 0.0, 0.4));  // rotated: another
  const auto n = static_cast<std::uint32_t>(scan_.description.projections_per_rotation());
  test::begin_scan(*pipeline_, scan_);
  test::feed_phantom(*pipeline_, scan_, 0, n);
  pipeline_->wait_idle();
  for (std::uint32_t id : {1u, 2u})
    ASSERT_TRUE(wait_residual(id, n)) << "slice " << id;
  EXPECT_EQ(residual(3)->reason, "matrix_budget_full") << "a second matrix is over the budget";
  EXPECT_NE(residual(1)->residual, residual(2)->residual) << "different rows, different images";
  EXPECT_EQ(pipeline_->metrics().refinement_matrix_builds, 1u) << "slices 1 and 2 share one";

  // A refinement of the same problem shares it too; the checks of that problem then cost the
  // budget nothing, so slice 3 is checked now (with a matrix of its own).
  expect_ok(test::axial_slice_at(4, 32, kPixelMm, 0.5, -0.5, 2.0));
  expect_ok(SetRefinementCommand{4, true, 5, 0, {}});
  ASSERT_TRUE(wait_armed({1, 2, 3}));
  test::feed_phantom(*pipeline_, scan_, n, n);
  pipeline_->wait_idle();
  for (std::uint32_t id : {1u, 2u, 3u, 4u})
    ASSERT_TRUE(wait_residual(id, 2 * n)) << "slice " << id;
  ASSERT_TRUE(sink_.wait_for([&] { return !sink_.refined().empty(); }, 30s));
  EXPECT_EQ(pipeline_->metrics().refinement_matrix_builds, 2u) << "slice 3's; slice 4 shares";

  // Moved into another frame, slice 2 needs a matrix of its own, and having the lower id it
  // takes the checks' budget from slice 3.
  expect_ok(test::axial_slice_at(2, 32, kPixelMm, -0.5, 0.5, 1.25, 0.8));
  EXPECT_EQ(residual(3)->reason, "matrix_budget_full");
  ASSERT_TRUE(wait_armed({2}));
  test::feed_phantom(*pipeline_, scan_, 2 * n, n);
  pipeline_->wait_idle();
  ASSERT_TRUE(wait_residual(2, 3 * n));
  EXPECT_EQ(pipeline_->metrics().refinement_matrix_builds, 3u);
  EXPECT_EQ(pipeline_->metrics().errors, 0u);
}

}  // namespace
}  // namespace slicestream
