// Backend failures at each stage boundary (preprocess, filter, store update, calibration) are
// logged, counted (errors and the lost frame under "backend_error"), published as error events,
// and the pipeline keeps running with consistent slices.
#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using test::call;

// The real CpuBackend, failing on chosen calls (counted per operation, from 0; store updates
// counted per projection).
class FaultyBackend final : public test::ForwardingBackend {
 public:
  int fail_preprocess_call = -1;
  int fail_filter_call = -1;
  int fail_replace_call = -1;
  bool fail_calibration = false;
  std::atomic<bool> fail_refiner{false};

  void set_calibration(const std::vector<float>& dark, const std::vector<float>& flat) override {
    if (fail_calibration) throw BackendError("injected calibration failure");
    inner_.set_calibration(dark, flat);
  }
  std::unique_ptr<ProjectionBuffer> preprocess(const FrameView& raw,
                                               const ProjectionVector& vector) override {
    if (preprocess_calls_++ == fail_preprocess_call) throw BackendError("injected preprocess");
    return inner_.preprocess(raw, vector);
  }
  std::vector<PreprocessCounters> take_preprocess_counts() override {
    return inner_.take_preprocess_counts();
  }
  void filter(ProjectionBuffer& projection) override {
    if (filter_calls_++ == fail_filter_call) throw BackendError("injected filter failure");
    inner_.filter(projection);
  }
  void replace_projections(std::vector<ProjectionUpdate>& updates, float scale) override {
    for (ProjectionUpdate& update : updates) {
      if (replace_calls_++ == fail_replace_call) {
        // Fail half-way: the live targets are damaged, the projection is lost.
        for (ReconTarget* target : update.live)
          inner_.clear_target(*target);
        update.projection.reset();
        throw BackendError("injected failure after a partial update");
      }
      apply_one(update, scale);
    }
  }
  std::unique_ptr<SliceRefiner> create_refiner(const RefinementSetup& setup) override {
    if (fail_refiner) throw BackendError("injected refiner failure");
    return inner_.create_refiner(setup);
  }

 private:
  std::atomic<int> preprocess_calls_{0};
  std::atomic<int> filter_calls_{0};
  int replace_calls_ = 0;
};

TEST(BackendFailures, AreCountedReportedAndTheWindowStaysConsistent) {
  test::RecordingSink sink;
  auto backend = std::make_unique<FaultyBackend>();
  backend->fail_preprocess_call = 3;
  backend->fail_filter_call = 10;  // the 11th filtered projection (12th frame)
  backend->fail_replace_call = 20;
  PipelineConfig config = test::small_config();
  config.refresh_rotations = 0;
  Pipeline pipeline(config, std::move(backend), sink);
  pipeline.start();
  const test::TestScan scan = test::make_parallel_scan(1, {10, 24}, 16, PixelType::kFloat32);
  const SetSliceCommand slice = test::axial_slice(scan.description, 0, 24);
  ASSERT_TRUE(call(pipeline, slice).status.ok());
  ASSERT_TRUE(pipeline.submit(ScanBegin{scan.description, 0}));
  std::mt19937 rng(5);
  for (std::uint32_t i = 0; i < 40; ++i) {
    ASSERT_TRUE(pipeline.submit(test::make_random_frame(scan.description, i, rng)));
  }
  pipeline.wait_idle();
  const MetricsSnapshot m = pipeline.metrics();
  EXPECT_EQ(m.errors, 3u);
  EXPECT_EQ(m.discards.at("backend_error"), 3u);
  EXPECT_EQ(m.projections_integrated, 37u);
  EXPECT_EQ(sink.events_with_reason("backend_error"), 3u);
  // After the half-done update the slices were rebuilt from the store: still consistent.
  const CommandReply full = call(pipeline, GetSliceCommand{slice.orientation, 24, 24});
  ASSERT_TRUE(full.slice.has_value());
  EXPECT_LT(test::relative_error(sink.last_slice(0)->values, full.slice->values), 1e-5);
}

TEST(BackendFailures, AFailedCalibrationIsReportedAndFramesStillFlow) {
  test::RecordingSink sink;
  auto backend = std::make_unique<FaultyBackend>();
  backend->fail_calibration = true;
  Pipeline pipeline(test::small_config(), std::move(backend), sink);
  pipeline.start();
  const test::TestScan scan = test::make_parallel_scan(2, {12, 32}, 24);
  test::begin_scan(pipeline, scan);
  test::feed_phantom(pipeline, scan, 0, 24);
  pipeline.wait_idle();
  const MetricsSnapshot m = pipeline.metrics();
  EXPECT_EQ(m.errors, 1u);
  EXPECT_EQ(m.projections_integrated, 24u);
  EXPECT_GE(sink.events_with_reason("backend_error"), 1u);
}

TEST(BackendFailures, AFailedRefinementIsReportedRetriedLaterAndFramesStillFlow) {
  test::RecordingSink sink;
  auto backend = std::make_unique<FaultyBackend>();
  backend->fail_refiner = true;
  PipelineConfig config = test::small_config();
  config.max_projection_batch = 1;  // one update per frame, counted below
  Pipeline pipeline(config, std::move(backend), sink);
  pipeline.start();
  const test::TestScan scan = test::make_parallel_scan(3, {12, 32}, 24);
  ASSERT_TRUE(call(pipeline, test::axial_slice(scan.description, 0, 32)).status.ok());
  ASSERT_TRUE(call(pipeline, SetRefinementCommand{0, true, 5, 0, {}}).status.ok());
  test::begin_scan(pipeline, scan);
  test::feed_phantom(pipeline, scan, 0, 24);
  pipeline.wait_idle();
  ASSERT_TRUE(sink.wait_for([&] { return sink.events_with_reason("refinement_failed") > 0; },
                            std::chrono::seconds(20)));
  test::feed_phantom(pipeline, scan, 24, 24);
  pipeline.wait_idle();
  const MetricsSnapshot m = pipeline.metrics();
  EXPECT_EQ(m.projections_integrated, 48u);
  EXPECT_EQ(m.errors, 1u) << "a failed refinement is retried after a delay, not at once";
  EXPECT_EQ(m.refinements_run, 0u);
  // Every frame's update was published, or replaced by a newer one while the publish stage was
  // behind; the last one shows every frame.
  EXPECT_EQ(sink.slices().size() + m.publications_coalesced, test::slice_count(pipeline) * 48u);
  EXPECT_EQ(sink.last_slice(0)->projections_integrated, 48u);
  const CommandReply status = call(pipeline, GetStatusCommand{});
  ASSERT_EQ(status.report->refinements.size(), 1u);
  EXPECT_NE(status.report->refinements[0].detail.find("injected"), std::string::npos);
}

}  // namespace
}  // namespace slicestream
