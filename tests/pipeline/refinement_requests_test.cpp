// SetRefinement's refusals: every class of bad request is answered with its code and a
// machine-readable reason, counted under MetricsSnapshot::requests_refused, and the pipeline
// keeps reconstructing. Refined slices that move or go away stop being refined with a warning
// instead of failing; in a cone-beam scan only the slice in the source plane is refined.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using test::call;

constexpr double kPixelMm = 0.5;

class RefinementRequestsTest : public ::testing::Test {
 protected:
  RefinementRequestsTest() {
    PipelineConfig config = test::small_config();
    config.refinement.max_slices = 2;
    config.refinement.max_iterations = 50;
    config.refinement.max_matrix_bytes = std::size_t{16} << 20;
    pipeline_ = std::make_unique<Pipeline>(config, test::cpu_backend(), sink_);
    pipeline_->start();
  }
  // Sends `command` and expects a refusal with `code` and `reason`.
  void expect_refused(Command command, StatusCode code, const std::string& reason) {
    const CommandReply reply = call(*pipeline_, std::move(command));
    EXPECT_EQ(reply.status.code, code) << reply.status.message;
    EXPECT_EQ(reply.status.reason, reason) << reply.status.message;
    EXPECT_FALSE(reply.status.message.empty());
    ++expected_[reason];
  }
  void expect_ok(Command command) {
    const CommandReply reply = call(*pipeline_, std::move(command));
    EXPECT_EQ(reply.status.code, StatusCode::kOk) << reply.status.message;
  }
  std::vector<RefinementStatus> refinements() {
    return call(*pipeline_, GetStatusCommand{}).report->refinements;
  }

  test::RecordingSink sink_;
  std::unique_ptr<Pipeline> pipeline_;
  std::map<std::string, std::uint64_t> expected_;
  test::TestScan scan_ =
      test::make_parallel_scan(41, {16, 64}, 48, PixelType::kUint16, 2, 2, kPixelMm);
};

TEST_F(RefinementRequestsTest, BadRequestsAreRefusedCountedAndThePipelineLives) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Before any scan: the request itself and the slice set are checked.
  expect_refused(SetRefinementCommand{42, true, 10, 1, {}}, StatusCode::kNotFound, "unknown_slice");
  expect_refused(SetRefinementCommand{42, false, 0, 0, {}}, StatusCode::kNotFound, "unknown_slice");
  expect_ok(test::axial_slice(scan_.description, 3, 32));
  expect_refused(SetRefinementCommand{3, true, 51, 1, {}}, StatusCode::kInvalidArgument,
                 "too_many_iterations");
  expect_refused(SetRefinementCommand{3, true, -1, 1, {}}, StatusCode::kInvalidArgument,
                 "bad_iterations");
  expect_refused(SetRefinementCommand{3, true, 5, nan, {}}, StatusCode::kInvalidArgument,
                 "bad_interval");
  expect_refused(SetRefinementCommand{3, true, 5, -1, {}}, StatusCode::kInvalidArgument,
                 "bad_interval");
  expect_ok(test::oblique_slice(scan_.description, 4, 32));
  expect_refused(SetRefinementCommand{4, true, 5, 1, {}}, StatusCode::kInvalidArgument,
                 "not_axial");
  SetSliceCommand stretched = test::axial_slice(scan_.description, 5, 32);
  stretched.height = 16;
  expect_ok(stretched);
  expect_refused(SetRefinementCommand{5, true, 5, 1, {}}, StatusCode::kInvalidArgument,
                 "non_square_pixels");

  // Accepted before a scan, it waits for one; a slice that then leaves the xy-plane stays listed
  // as unavailable, with a warning.
  expect_ok(test::axial_slice(scan_.description, 10, 32));
  expect_ok(SetRefinementCommand{10, true, 5, 1, {}});
  ASSERT_EQ(refinements().size(), 1u);
  EXPECT_EQ(refinements()[0].state, "waiting_for_scan");
  expect_ok(test::oblique_slice(scan_.description, 10, 32));
  EXPECT_EQ(refinements()[0].state, "unavailable");
  EXPECT_NE(refinements()[0].detail.find("not axial"), std::string::npos);
  expect_ok(RemoveSliceCommand{10});
  EXPECT_TRUE(refinements().empty());

  // During a parallel-beam scan the geometry is checked too.
  test::begin_scan(*pipeline_, scan_);
  pipeline_->wait_idle();  // commands overtake the data path: let the scan start first
  expect_ok(test::axial_slice_at(6, 32, kPixelMm, 0, 0, 6.0));  // above the 8 mm detector
  expect_refused(SetRefinementCommand{6, true, 5, 1, {}}, StatusCode::kFailedPrecondition,
                 "slice_outside_detector");
  expect_ok(test::axial_slice(scan_.description, 7, 512));  // ~200 MiB of matrix
  expect_refused(SetRefinementCommand{7, true, 5, 1, {}}, StatusCode::kResourceExhausted,
                 "matrix_too_large");
  expect_ok(SetRefinementCommand{3, true, 5, 0, {}});
  expect_ok(test::axial_slice_at(8, 32, kPixelMm, 0, 0, 1.0));
  expect_ok(SetRefinementCommand{8, true, 0, 0, {}});
  expect_ok(test::axial_slice_at(9, 32, kPixelMm, 0, 0, -1.0));
  expect_refused(SetRefinementCommand{9, true, 5, 0, {}}, StatusCode::kResourceExhausted,
                 "too_many_refinements");
  expect_ok(SetRefinementCommand{3, true, 8, 0.5, {}});  // changing one needs no room
  ASSERT_EQ(refinements().size(), 2u);

  // The scan goes on and is refined.
  const auto n = static_cast<std::uint32_t>(scan_.description.projections_per_rotation());
  test::feed_phantom(*pipeline_, scan_, 0, n);
  pipeline_->wait_idle();
  ASSERT_TRUE(sink_.wait_for(
      [&] {
        for (const RefinedSliceImage& r : sink_.refined()) {
          if (r.slice.slice_id == 3 && r.slice.projections_integrated == n) return true;
        }
        return false;
      },
      std::chrono::seconds(30)));

  // A refined slice that moves out of the xy-plane stays listed, unavailable, with a warning.
  expect_ok(SetSliceCommand{8, test::oblique_slice(scan_.description, 8, 32).orientation, 32, 32});
  EXPECT_TRUE(
      sink_.wait_for([&] { return sink_.events_with_reason("refinement_unavailable") == 2; },
                     std::chrono::seconds(10)));
  for (const RefinementStatus& r : refinements()) {
    if (r.slice_id == 8) {
      EXPECT_EQ(r.state, "unavailable");
    }
  }
  // Removing a slice ends its refinement; switching one off twice is fine.
  expect_ok(RemoveSliceCommand{8});
  expect_ok(SetRefinementCommand{7, false, 0, 0, {}});
  ASSERT_EQ(refinements().size(), 1u);

  // A cone-beam scan: the refined slice lies in the source plane (z = 0), a fan-beam problem,
  // and stays refined; a slice above that plane is refused.
  const test::TestScan cone = test::make_cone_scan(42, {16, 64}, 40, 150, 100);
  test::begin_scan(*pipeline_, cone);
  test::feed_phantom(*pipeline_, cone, 0, 10);
  pipeline_->wait_idle();
  EXPECT_EQ(sink_.events_with_reason("refinement_unavailable"), 2u);
  ASSERT_EQ(refinements().size(), 1u);
  EXPECT_EQ(refinements()[0].state, "collecting");
  expect_ok(test::axial_slice_at(11, 32, kPixelMm, 0, 0, 2.0));
  expect_refused(SetRefinementCommand{11, true, 5, 1, {}}, StatusCode::kFailedPrecondition,
                 "not_central_slice");

  const MetricsSnapshot m = pipeline_->metrics();
  EXPECT_EQ(m.requests_refused, expected_);
  EXPECT_EQ(m.errors, 0u);
  EXPECT_EQ(m.projections_integrated, n + 10);
  EXPECT_EQ(call(*pipeline_, GetStatusCommand{}).status.code, StatusCode::kOk);
}

// A refined slice's sinogram window and the worker's snapshot of it (with the FBP image) count
// against the memory budget: charged while the refinement lasts, and a SetRefinement without
// room is refused with the numbers.
TEST_F(RefinementRequestsTest, TheSinogramWindowIsChargedAndRefusedWithoutRoom) {
  test::begin_scan(*pipeline_, scan_);
  pipeline_->wait_idle();
  const SharedMemoryBudget& budget = pipeline_->backend().host_memory();
  const std::size_t window_bytes = (2 * std::size_t{48} * 64 + 32 * 32) * sizeof(float);
  const std::size_t before = budget->used_bytes();
  expect_ok(test::axial_slice(scan_.description, 3, 32));
  expect_ok(SetRefinementCommand{3, true, 5, 0, {}});
  EXPECT_GE(budget->used_bytes(), before + window_bytes) << "the window is charged";

  // Room for another slice (its image and target: 12 KiB) but not for its window (29 KiB).
  auto others = budget->try_charge(budget->free_bytes() - 16 * 1024);
  ASSERT_TRUE(others);
  expect_ok(test::axial_slice_at(4, 32, kPixelMm, 0, 0, 1.0));
  expect_refused(SetRefinementCommand{4, true, 5, 0, {}}, StatusCode::kResourceExhausted,
                 "memory_budget");
  const CommandReply refused = call(*pipeline_, SetRefinementCommand{4, true, 5, 0, {}});
  ++expected_["memory_budget"];
  EXPECT_NE(refused.status.message.find("sinogram window"), std::string::npos)
      << refused.status.message;
  EXPECT_LE(budget->used_bytes(), budget->limit_bytes());
  others.reset();
  expect_ok(SetRefinementCommand{4, true, 5, 0, {}});
  EXPECT_EQ(pipeline_->metrics().requests_refused, expected_);
}

}  // namespace
}  // namespace slicestream
