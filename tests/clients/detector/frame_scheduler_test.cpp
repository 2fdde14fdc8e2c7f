#include "clients/detector/frame_scheduler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace slicestream::detector {
namespace {

using std::chrono::nanoseconds;

// Time moves only when the scheduler sleeps or the test advances it.
class FakeClock final : public Clock {
 public:
  nanoseconds now() const override { return now_; }
  void sleep_until(nanoseconds time) override {
    sleeps.push_back(time - now_);
    if (time > now_) now_ = time;
  }
  void advance(nanoseconds by) { now_ += by; }

  std::vector<nanoseconds> sleeps;

 private:
  nanoseconds now_{1'000'000'000};
};

TEST(FrameScheduler, DueTimesDoNotDriftOverLongScans) {
  FakeClock clock;
  FrameScheduler scheduler(83.0, clock);
  scheduler.start();
  const long double start = 1e9L;
  for (std::uint64_t k : {1ull, 83ull, 1000ull, 123457ull, 10'000'000ull, 1'000'000'000ull}) {
    const long double exact = start + static_cast<long double>(k) * 1e9L / 83.0L;
    EXPECT_LE(std::fabs(static_cast<long double>(scheduler.due_time(k).count()) - exact), 1.0L)
        << "frame " << k;
  }
}

TEST(FrameScheduler, WaitsUntilEachFrameIsDue) {
  FakeClock clock;
  FrameScheduler scheduler(1000.0, clock);
  scheduler.start();
  for (std::uint64_t k = 0; k < 50; ++k) {
    const nanoseconds due = scheduler.wait_for(k);
    EXPECT_EQ(due, nanoseconds(1'000'000'000 + 1'000'000 * static_cast<std::int64_t>(k)));
    EXPECT_EQ(clock.now(), due);
    clock.advance(nanoseconds(200'000));  // sending takes a fifth of the period
  }
  EXPECT_EQ(scheduler.stats().late_frames, 0u);
}

TEST(FrameScheduler, LateFramesGoOutAtOnceAndTheScheduleCatchesUp) {
  FakeClock clock;
  FrameScheduler scheduler(100.0, clock);  // 10 ms period
  scheduler.start();
  for (std::uint64_t k = 0; k <= 10; ++k)
    scheduler.wait_for(k);
  clock.advance(nanoseconds(45'000'000));  // a send blocked for 4.5 periods after frame 10
  const std::size_t sleeps_before = clock.sleeps.size();
  // Frame 11 was due 10 ms after frame 10: it is 35 ms late and goes out at once.
  EXPECT_EQ(scheduler.wait_for(11), scheduler.due_time(11));
  EXPECT_EQ(clock.sleeps.size(), sleeps_before);
  EXPECT_EQ(scheduler.stats().late_frames, 1u);
  EXPECT_EQ(scheduler.stats().max_lateness, nanoseconds(35'000'000));
  // Frames 12..14 are overdue too (no sleeping); frame 15 is on time again: no frame is skipped
  // and the schedule keeps its original grid.
  for (std::uint64_t k = 12; k <= 14; ++k)
    scheduler.wait_for(k);
  EXPECT_EQ(clock.sleeps.size(), sleeps_before);
  EXPECT_EQ(scheduler.wait_for(15), nanoseconds(1'000'000'000 + 150'000'000));
  EXPECT_EQ(clock.now(), nanoseconds(1'000'000'000 + 150'000'000));
  // Late by more than a period: 11 (35 ms), 12 (25 ms), 13 (15 ms); 14 is 5 ms behind.
  EXPECT_EQ(scheduler.stats().late_frames, 3u);
}

TEST(FrameScheduler, ZeroFpsNeverWaits) {
  FakeClock clock;
  FrameScheduler scheduler(0.0, clock);
  scheduler.start();
  for (std::uint64_t k = 0; k < 10; ++k) {
    EXPECT_EQ(scheduler.wait_for(k), clock.now());
    clock.advance(nanoseconds(7));
  }
  EXPECT_TRUE(clock.sleeps.empty());
}

TEST(FrameScheduler, LongWaitsSleepInSlicesAndStopEndsThem) {
  FakeClock clock;
  std::atomic<bool> stop{false};
  FrameScheduler scheduler(2.0, clock, &stop);  // 500 ms period
  scheduler.start();
  scheduler.wait_for(1);
  EXPECT_EQ(clock.sleeps.size(), 10u);  // 500 ms in 50 ms slices
  for (nanoseconds slice : clock.sleeps)
    EXPECT_LE(slice, nanoseconds(50'000'000));
  stop = true;
  const nanoseconds before = clock.now();
  scheduler.wait_for(2);
  EXPECT_EQ(clock.now(), before);
}

TEST(FrameScheduler, RejectsNegativeRates) {
  FakeClock clock;
  EXPECT_THROW(FrameScheduler(-1.0, clock), std::invalid_argument);
  EXPECT_THROW(FrameScheduler(std::nan(""), clock), std::invalid_argument);
}

}  // namespace
}  // namespace slicestream::detector
