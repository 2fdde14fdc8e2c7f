// A slice that needs a full recompute while frames are waiting (SetSlice, a rotation-axis change)
// is built in units beside them: between two store updates at most one unit of backprojection
// runs (before, a burst of large SetSlices ran every whole recompute between two frames), the
// slice is never read for publication while half built, the frames that arrive meanwhile are
// integrated into it, and the result equals a recompute from scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "pipeline/stages/on_demand_slices.hpp"
#include "tests/common/time_scale.hpp"
#include "tests/pipeline/forwarding_backend.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using test::call;

constexpr int kWindow = 64;
constexpr int kSide = 1024;  // 2^20 pixels x 64 slots: four units of 16 slots
// Frames that all fit in the reconstruct stage's hands (one in the store update, a full queue of
// small_config's 8 behind it), so that frames wait until the last of them is popped.
constexpr int kWaiting = 9;

// What the reconstruct stage asked of the backend, in order.
struct BackendCall {
  enum Kind { kUpdate, kBackproject, kRead } kind;
  const ReconTarget* target = nullptr;
  std::size_t updates = 0;  // kBackproject: pixel-projection updates
  bool accumulate = false;
  int last_slot = -1;
};

// A CpuBackend whose store updates wait while the gate is closed and that logs the calls.
class LoggingGateBackend final : public test::ForwardingBackend {
 public:
  void close() { set_open(false); }
  void open() { set_open(true); }
  std::vector<BackendCall> calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

  void replace_projections(std::vector<ProjectionUpdate>& updates, float scale) override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      opened_.wait(lock, [&] { return open_; });
      calls_.push_back({BackendCall::kUpdate});
    }
    inner_.replace_projections(updates, scale);
  }
  void backproject_store(const std::vector<int>& slots, ReconTarget& target, float scale,
                         bool accumulate, int plane_begin, int plane_end) override {
    log({BackendCall::kBackproject, &target, slots.size() * target.grid().points(), accumulate,
         slots.empty() ? -1 : slots.back()});
    inner_.backproject_store(slots, target, scale, accumulate, plane_begin, plane_end);
  }
  void read_target(const ReconTarget& target, float* host) override {
    log({BackendCall::kRead, &target});
    inner_.read_target(target, host);
  }

 private:
  void set_open(bool open) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = open;
    }
    opened_.notify_all();
  }
  void log(BackendCall call) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.push_back(call);
  }

  mutable std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = true;
  std::vector<BackendCall> calls_;
};

class SliceBuildsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = std::make_unique<LoggingGateBackend>();
    backend_ = backend.get();
    PipelineConfig config = test::small_config();
    config.max_projection_batch = 1;  // one store update per frame
    configure(config);
    pipeline_ = std::make_unique<Pipeline>(config, std::move(backend), sink_);
    pipeline_->start();
    test::begin_scan(*pipeline_, scan_);
    feed(0, kWindow);
    pipeline_->wait_idle();
  }

  virtual void configure(PipelineConfig&) {}

  void feed(int first, int count) {
    for (int i = first; i < first + count; ++i) {
      ASSERT_TRUE(pipeline_->submit(
          test::make_random_frame(scan_.description, static_cast<std::uint32_t>(i), rng_)));
    }
  }
  // Frames [first, first + count) reach the reconstruct stage while its store updates wait, so
  // that they queue up; `while_waiting` runs once the queue is full, then the gate opens.
  void with_frames_waiting(int first, int count, const std::function<void()>& while_waiting) {
    backend_->close();
    std::thread feeder([&] { feed(first, count); });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      const StageMetrics reconstruct = pipeline_->metrics().stages.at(3);
      if (reconstruct.queue_depth >= reconstruct.queue_capacity) break;
      std::this_thread::sleep_for(1ms);
    }
    while_waiting();
    backend_->open();
    feeder.join();
    pipeline_->wait_idle();
  }
  // SetSlice without waiting for its reply (it comes after the queued frames' first batch).
  void set_slice_async(const SetSliceCommand& slice) {
    pipeline_->submit_command(slice, [this](CommandReply reply) {
      std::lock_guard<std::mutex> lock(replies_mutex_);
      replies_.push_back(std::move(reply));
    });
  }
  std::vector<CommandReply> replies() {
    std::lock_guard<std::mutex> lock(replies_mutex_);
    return replies_;
  }
  // The final image of `slice` against a recompute of the whole store (GetSlice, from scratch).
  void expect_current(const SetSliceCommand& slice, std::uint64_t integrated) {
    const std::optional<SliceImage> last = sink_.last_slice(slice.slice_id);
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ(last->projections_integrated, integrated);
    const CommandReply full =
        call(*pipeline_, GetSliceCommand{slice.orientation, slice.width, slice.height});
    ASSERT_TRUE(full.slice.has_value()) << full.status.message;
    ASSERT_GT(test::max_abs(full.slice->values), 1e-3);
    EXPECT_LT(test::relative_error(last->values, full.slice->values), 1e-5);
  }

  test::RecordingSink sink_;
  LoggingGateBackend* backend_ = nullptr;
  std::unique_ptr<Pipeline> pipeline_;
  test::TestScan scan_ = test::make_parallel_scan(1, {10, 24}, kWindow, PixelType::kFloat32);
  std::mt19937 rng_{11};
  std::mutex replies_mutex_;
  std::vector<CommandReply> replies_;
};

// The backprojection work between consecutive store updates from `from` on, up to the last
// update (after it no frame waits, and units run back to back). The reconstruct stage runs at
// most one unit per item it handles (frame or command), within its share of the time.
std::vector<std::size_t> work_between_updates(const std::vector<BackendCall>& calls,
                                              std::size_t from) {
  std::vector<std::size_t> work{0};
  for (std::size_t i = from; i < calls.size(); ++i) {
    if (calls[i].kind == BackendCall::kUpdate) {
      work.push_back(0);
    } else if (calls[i].kind == BackendCall::kBackproject) {
      work.back() += calls[i].updates;
    }
  }
  work.pop_back();
  return work;
}

// At most `commands` units before the first frame after the build started (one per command
// handled there), then at most one unit between two frames.
void expect_units_beside_frames(const std::vector<BackendCall>& calls, std::size_t first,
                                std::size_t commands) {
  const std::vector<std::size_t> work = work_between_updates(calls, first);
  ASSERT_GE(work.size(), 2u) << "frames were integrated while the slices were built";
  EXPECT_LE(work[0], commands * OnDemandSlices::kUnitUpdates);
  for (std::size_t i = 1; i < work.size(); ++i)
    EXPECT_LE(work[i], OnDemandSlices::kUnitUpdates) << "between frames " << i << " and " << i + 1;
}

// Index of the first backprojection into a target of `pixels` points, or calls.size().
std::size_t first_build_unit(const std::vector<BackendCall>& calls, std::size_t pixels) {
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].kind == BackendCall::kBackproject && calls[i].target->grid().points() == pixels &&
        !calls[i].accumulate) {
      return i;
    }
  }
  return calls.size();
}

// No target is read (published) between the first and the last unit of its build.
void expect_no_read_while_built(const std::vector<BackendCall>& calls) {
  std::map<const ReconTarget*, bool> in_build;
  for (const BackendCall& c : calls) {
    if (c.kind == BackendCall::kBackproject &&
        c.target->grid().points() == std::size_t{kSide} * kSide) {
      in_build[c.target] = c.last_slot < kWindow - 1;
    } else if (c.kind == BackendCall::kRead) {
      EXPECT_FALSE(in_build[c.target]) << "a half-built slice was read for publication";
    }
  }
}

TEST_F(SliceBuildsTest, ABurstOfLargeSetSlicesWhileFramesWaitRunsInUnitsBesideThem) {
  const std::size_t calls_before = backend_->calls().size();
  std::vector<SetSliceCommand> slices;
  for (std::uint32_t id = 10; id < 14; ++id) {
    slices.push_back(test::oblique_slice(scan_.description, id, kSide));
    slices.back().orientation.values[8] += 0.1f * static_cast<float>(id - 10);
  }
  with_frames_waiting(kWindow, kWaiting, [&] {
    for (const SetSliceCommand& slice : slices)
      set_slice_async(slice);
  });
  const std::vector<CommandReply> answers = replies();
  ASSERT_EQ(answers.size(), slices.size());
  for (const CommandReply& reply : answers) {
    ASSERT_TRUE(reply.status.ok()) << reply.status.message;
    EXPECT_NE(reply.status.message.find("computed beside the frames"), std::string::npos)
        << reply.status.message;
  }
  EXPECT_EQ(pipeline_->metrics().projections_integrated,
            static_cast<std::uint64_t>(kWindow + kWaiting));

  const std::vector<BackendCall> calls = backend_->calls();
  const std::size_t first = first_build_unit(calls, std::size_t{kSide} * kSide);
  ASSERT_LT(first, calls.size()) << "no slice was built";
  ASSERT_GE(first, calls_before);
  // Before, the four whole recomputes (4 x 2^26 updates) ran between two frames.
  expect_units_beside_frames(calls, first, slices.size());
  expect_no_read_while_built(calls);
  for (const SetSliceCommand& slice : slices)
    expect_current(slice, kWindow + kWaiting);
}

TEST_F(SliceBuildsTest, ARotationAxisChangeWhileFramesWaitIsBuiltInUnitsAndEqualsARecompute) {
  // Only this slice, so that its build starts at once (a build runs after those of lower ids).
  for (std::uint32_t id = 0; id < kDefaultSliceCount; ++id)
    ASSERT_TRUE(call(*pipeline_, RemoveSliceCommand{id}).status.ok());
  const SetSliceCommand slice = test::oblique_slice(scan_.description, 7, kSide);
  ASSERT_TRUE(call(*pipeline_, slice).status.ok());
  pipeline_->wait_idle();
  ASSERT_EQ(sink_.slices_of(7).size(), 1u);
  // Its own build's units ran within the thread share, which allows the next unit only after
  // three times the last one's duration while frames wait: let that pass, so that the rebuild's
  // first unit runs with the command, before the waiting frames.
  std::this_thread::sleep_for(std::chrono::milliseconds(test::scaled_ms(1000)));
  const std::size_t calls_before = backend_->calls().size();
  SetParametersCommand offset;
  offset.rotation_axis_offset_px = 1.5;
  with_frames_waiting(kWindow, kWaiting, [&] {
    pipeline_->submit_command(offset, [this](CommandReply reply) {
      std::lock_guard<std::mutex> lock(replies_mutex_);
      replies_.push_back(std::move(reply));
    });
  });
  ASSERT_EQ(replies().size(), 1u);
  ASSERT_TRUE(replies()[0].status.ok()) << replies()[0].status.message;
  std::vector<BackendCall> calls = backend_->calls();
  calls.erase(calls.begin(), calls.begin() + static_cast<std::ptrdiff_t>(calls_before));
  const std::size_t first = first_build_unit(calls, std::size_t{kSide} * kSide);
  ASSERT_LT(first, calls.size()) << "the slice was not rebuilt";
  expect_units_beside_frames(calls, first, 1);
  expect_no_read_while_built(calls);
  // The GetSlice uses the new offset too: the rebuilt slice holds every frame with it.
  expect_current(slice, kWindow + kWaiting);
}

// A slice-move latency users feel: with no frame waiting, a slice whose recompute is quick (here
// one unit's worth) is computed in one backprojection and published at once.
TEST_F(SliceBuildsTest, AQuickSliceMovedWhileNoFrameWaitsIsComputedAtOnce) {
  constexpr int kSmall = 256;  // 2^16 pixels x 64 slots: within one unit
  const SetSliceCommand slice = test::oblique_slice(scan_.description, 8, kSmall);
  const std::size_t calls_before = backend_->calls().size();
  const CommandReply reply = call(*pipeline_, slice);
  ASSERT_TRUE(reply.status.ok()) << reply.status.message;
  EXPECT_EQ(reply.status.message.find("computed beside the frames"), std::string::npos);
  const std::vector<BackendCall> calls = backend_->calls();
  ASSERT_GT(calls.size(), calls_before);
  EXPECT_EQ(calls[calls_before].kind, BackendCall::kBackproject);
  EXPECT_EQ(calls[calls_before].updates, std::size_t{kSmall} * kSmall * kWindow);
  pipeline_->wait_idle();
  EXPECT_EQ(sink_.slices_of(8).size(), 1u);
  expect_current(slice, kWindow);
}

// Without frames waiting, a large slice is computed too: in units when its first unit says the
// rest is slow (the CPU backend here), and published once complete.
TEST_F(SliceBuildsTest, ALargeSliceMovedWhileNoFrameWaitsIsPublishedOnceComplete) {
  const SetSliceCommand slice = test::oblique_slice(scan_.description, 8, kSide);
  ASSERT_TRUE(call(*pipeline_, slice).status.ok());
  pipeline_->wait_idle();
  EXPECT_EQ(sink_.slices_of(8).size(), 1u);
  expect_no_read_while_built(backend_->calls());
  expect_current(slice, kWindow);
}

}  // namespace
}  // namespace slicestream

namespace slicestream {
namespace {

class LargeDefaultSlicesTest : public SliceBuildsTest {
 protected:
  void configure(PipelineConfig& config) override {
    config.default_slice_size = kSide;
    // Not the subject here, and slow for three slices of this size.
    config.refinement.residual_interval_s = 0;
  }
};

TEST_F(LargeDefaultSlicesTest, AResetWhileFramesWaitBuildsTheDefaultsInUnitsBesideThem) {
  const std::size_t calls_before = backend_->calls().size();
  with_frames_waiting(kWindow, kWaiting, [&] {
    pipeline_->submit_command(ResetSlicesCommand{}, [this](CommandReply reply) {
      std::lock_guard<std::mutex> lock(replies_mutex_);
      replies_.push_back(std::move(reply));
    });
  });
  ASSERT_EQ(replies().size(), 1u);
  ASSERT_TRUE(replies()[0].status.ok()) << replies()[0].status.message;
  EXPECT_NE(replies()[0].status.message.find("computed beside the frames"), std::string::npos)
      << replies()[0].status.message;
  std::vector<BackendCall> calls = backend_->calls();
  calls.erase(calls.begin(), calls.begin() + static_cast<std::ptrdiff_t>(calls_before));
  // The first unit of a default slice's rebuild: a fresh (not accumulating) backprojection.
  std::size_t first = calls.size();
  for (std::size_t i = 0; i < calls.size() && first == calls.size(); ++i) {
    if (calls[i].kind == BackendCall::kBackproject && !calls[i].accumulate) first = i;
  }
  ASSERT_LT(first, calls.size()) << "the default slices were not rebuilt";
  // Before, the three whole recomputes ran between two frames.
  expect_units_beside_frames(calls, first, 1);
  for (std::uint32_t id = 0; id < kDefaultSliceCount; ++id) {
    const std::optional<SliceImage> last = sink_.last_slice(id);
    ASSERT_TRUE(last.has_value()) << id;
    EXPECT_EQ(std::max(last->width, last->height), kSide) << id;
    expect_current(SetSliceCommand{id, last->orientation, last->width, last->height},
                   kWindow + kWaiting);
  }
}

}  // namespace
}  // namespace slicestream
