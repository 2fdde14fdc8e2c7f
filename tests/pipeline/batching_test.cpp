// Batched store updates: projections that wait together in the reconstruct queue go to the
// backend as one replace_projections call, with the sliding-window, refresh/shadow and
// per-rotation semantics of one-by-one updates (every frame integrated, slices equal to a full
// recompute and to an unbatched run), and failures inside a batch lose only the failed frame.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "gated_backend.hpp"
#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using test::call;
using test::relative_error;

constexpr int kWindow = 12;

struct RunResult {
  std::vector<SliceImage> published;  // every publication of slice 5, in order
  std::vector<float> full;            // GetSlice of slice 5 at the end (full recompute)
  std::vector<std::size_t> batches;
  MetricsSnapshot metrics;
};

// Feeds `frames` random already-linear frames (the same data for the same seed). With `gated`,
// the backend's gate opens only once the reconstruct queue is full, so that frames are batched.
// With `pace_rotations`, each rotation's frames go in only once slice 5 of the rotation before
// has been published: a publish stage that falls behind (a loaded machine) thins publications,
// latest wins, and a run that must see every rotation's publication waits for it.
RunResult run(PipelineConfig config, int frames, bool gated, int fail_update = -1,
              bool pace_rotations = false) {
  test::RecordingSink sink;
  auto backend = std::make_unique<test::GatedBackend>();
  test::GatedBackend* gate = backend.get();
  gate->fail_update = fail_update;
  if (!gated) gate->open();
  Pipeline pipeline(config, std::move(backend), sink);
  pipeline.start();
  const test::TestScan scan = test::make_parallel_scan(1, {10, 24}, kWindow, PixelType::kFloat32);
  const SetSliceCommand slice = test::axial_slice(scan.description, 5, 24);
  EXPECT_TRUE(call(pipeline, slice).status.ok());
  EXPECT_TRUE(call(pipeline, test::oblique_slice(scan.description, 6, 20)).status.ok());
  EXPECT_TRUE(pipeline.submit(ScanBegin{scan.description, 0}));
  std::thread feeder([&] {
    std::mt19937 rng(7);
    for (int i = 0; i < frames; ++i) {
      if (pace_rotations && i > 0 && i % kWindow == 0) {
        const auto integrated = static_cast<std::uint64_t>(i);
        EXPECT_TRUE(sink.wait_for(
            [&] {
              const auto last = sink.last_slice(5);
              return last && last->projections_integrated >= integrated;
            },
            10s))
            << "rotation ending at frame " << i << " was not published";
      }
      EXPECT_TRUE(pipeline.submit(
          test::make_random_frame(scan.description, static_cast<std::uint32_t>(i), rng)));
    }
  });
  if (gated) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      const MetricsSnapshot m = pipeline.metrics();
      const StageMetrics& reconstruct = m.stages.at(3);
      if (reconstruct.queue_depth >= reconstruct.queue_capacity) break;
      std::this_thread::sleep_for(1ms);
    }
    gate->open();
  }
  feeder.join();
  pipeline.wait_idle();
  RunResult result;
  result.published = sink.slices_of(5);
  const CommandReply full = call(pipeline, GetSliceCommand{slice.orientation, 24, 24});
  EXPECT_TRUE(full.slice.has_value());
  if (full.slice) result.full = full.slice->values.to_vector();
  result.batches = gate->batch_sizes();
  result.metrics = pipeline.metrics();
  return result;
}

PipelineConfig batching_config(int max_batch) {
  PipelineConfig config = test::small_config();
  config.max_projection_batch = max_batch;
  return config;
}

TEST(Batching, QueuedFramesAreBatchedAndEqualOneByOneUpdates) {
  const int frames = 4 * kWindow + 5;
  PipelineConfig config = batching_config(5);
  config.refresh_rotations = 1;  // a shadow in every rotation: batches meet its bookkeeping
  const RunResult batched = run(config, frames, /*gated=*/true);
  const RunResult reference = run(batching_config(1), frames, /*gated=*/false);

  ASSERT_FALSE(batched.batches.empty());
  EXPECT_GT(*std::max_element(batched.batches.begin(), batched.batches.end()), 1u)
      << "no batch formed although the queue was full";
  EXPECT_LE(*std::max_element(batched.batches.begin(), batched.batches.end()), 5u);
  EXPECT_TRUE(std::all_of(reference.batches.begin(), reference.batches.end(),
                          [](std::size_t n) { return n == 1; }));
  EXPECT_EQ(batched.metrics.projections_integrated, static_cast<std::uint64_t>(frames));
  EXPECT_TRUE(batched.metrics.discards.empty());
  // The reconstruct stage counts every frame of a batch.
  EXPECT_GE(batched.metrics.stages.at(3).items, static_cast<std::uint64_t>(frames));

  ASSERT_FALSE(batched.published.empty());
  const SliceImage& last = batched.published.back();
  EXPECT_EQ(last.projections_integrated, static_cast<std::uint64_t>(frames));
  ASSERT_GT(test::max_abs(batched.full), 0.01);
  EXPECT_LT(relative_error(last.values, batched.full), 1e-5);
  EXPECT_LT(relative_error(last.values, reference.published.back().values), 1e-5);
  // Fewer updates than frames: one store update per batch, and at most one publication of the
  // slice per update (publish_rate_hz 0; latest wins while the publish stage is behind).
  EXPECT_LT(batched.batches.size(), static_cast<std::size_t>(frames));
  EXPECT_LE(batched.published.size(), batched.batches.size());
}

TEST(Batching, PerRotationModePublishesEveryRotationFromBatches) {
  const int frames = 4 * kWindow;
  PipelineConfig config = batching_config(8);
  config.parameters.window_mode = WindowMode::kPerRotation;
  const RunResult batched = run(config, frames, /*gated=*/true);
  PipelineConfig unbatched = config;
  unbatched.max_projection_batch = 1;
  const RunResult reference =
      run(unbatched, frames, /*gated=*/false, /*fail_update=*/-1, /*pace_rotations=*/true);

  EXPECT_GT(*std::max_element(batched.batches.begin(), batched.batches.end()), 1u);
  EXPECT_EQ(batched.metrics.projections_integrated, static_cast<std::uint64_t>(frames));
  ASSERT_EQ(reference.published.size(), 4u);
  // The batched run feeds without pause, so a publish stage behind on a loaded machine may thin
  // its publications (latest wins, counted as coalesced); each one it makes is a whole rotation
  // and equals the unbatched run's image of that rotation, and the last rotation always comes.
  if (batched.metrics.publications_coalesced == 0) {
    EXPECT_EQ(batched.published.size(), reference.published.size());
  }
  ASSERT_FALSE(batched.published.empty());
  for (const SliceImage& image : batched.published) {
    SCOPED_TRACE("after " + std::to_string(image.projections_integrated) + " projections");
    ASSERT_EQ(image.projections_integrated % kWindow, 0u);
    const std::size_t r = image.projections_integrated / kWindow - 1;
    ASSERT_LT(r, reference.published.size());
    EXPECT_EQ(reference.published[r].projections_integrated, image.projections_integrated);
    EXPECT_LT(relative_error(image.values, reference.published[r].values), 1e-5);
  }
  EXPECT_EQ(batched.published.back().projections_integrated, static_cast<std::uint64_t>(frames));
  EXPECT_LT(relative_error(batched.published.back().values, batched.full), 1e-5);
}

TEST(Batching, AFailureInsideABatchLosesOnlyThatFrame) {
  const int frames = 3 * kWindow;
  PipelineConfig config = batching_config(6);
  config.refresh_rotations = 0;
  const RunResult batched = run(config, frames, /*gated=*/true, /*fail_update=*/3);
  EXPECT_GT(*std::max_element(batched.batches.begin(), batched.batches.end()), 1u);
  EXPECT_EQ(batched.metrics.projections_integrated, static_cast<std::uint64_t>(frames - 1));
  EXPECT_EQ(batched.metrics.discards.at("backend_error"), 1u);
  EXPECT_EQ(batched.metrics.errors, 1u);
  // The slices were rebuilt from the store and the rest of the batch was applied after it.
  ASSERT_FALSE(batched.published.empty());
  EXPECT_LT(relative_error(batched.published.back().values, batched.full), 1e-5);
  EXPECT_EQ(batched.published.back().projections_integrated,
            static_cast<std::uint64_t>(frames - 1));
}

}  // namespace
}  // namespace slicestream
