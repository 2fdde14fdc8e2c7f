// PreviewTiming: a rebuild is due when the store changed and the interval passed (at once when
// forced), and while frames are queued its units take at most a quarter of the thread.
#include "pipeline/stages/preview_timing.hpp"
#include "pipeline/stages/thread_share.hpp"

#include <gtest/gtest.h>

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using Clock = PreviewTiming::Clock;

TEST(PreviewTiming, ARebuildIsDueWhenTheStoreChangedAndTheIntervalPassed) {
  PreviewTiming timing;
  timing.reset();
  const Clock::time_point t0 = Clock::now();
  EXPECT_FALSE(timing.rebuild_due(t0, 1.0)) << "nothing changed";
  EXPECT_EQ(timing.rebuild_deadline(1.0), Clock::time_point::max());
  timing.store_changed();
  EXPECT_TRUE(timing.rebuild_due(t0, 1.0)) << "never built";
  timing.rebuild_started(t0);
  EXPECT_FALSE(timing.rebuild_due(t0 + 2s, 1.0)) << "built from the current store";
  timing.store_changed();
  EXPECT_FALSE(timing.rebuild_due(t0 + 500ms, 1.0));
  EXPECT_EQ(timing.rebuild_deadline(1.0), t0 + 1s);
  EXPECT_TRUE(timing.rebuild_due(t0 + 1s, 1.0));
}

TEST(PreviewTiming, AForcedRebuildIsDueAtOnceButOnlyForAChangedStore) {
  PreviewTiming timing;
  const Clock::time_point t0 = Clock::now();
  timing.store_changed();
  timing.rebuild_started(t0);
  timing.force();
  EXPECT_FALSE(timing.rebuild_due(t0, 10.0)) << "forced, but the store is unchanged";
  timing.store_changed();
  EXPECT_TRUE(timing.rebuild_due(t0 + 1ms, 10.0));
  EXPECT_EQ(timing.rebuild_deadline(10.0), Clock::time_point::min());
  timing.rebuild_started(t0 + 1ms);
  timing.store_changed();
  EXPECT_FALSE(timing.rebuild_due(t0 + 2ms, 10.0)) << "a start clears the force";
}

TEST(ThreadShare, UnderLoadUnitsTakeAQuarterOfTheThread) {
  ThreadShare timing;
  const Clock::time_point t0 = Clock::now();
  timing.unit_ran(t0, t0 + 10ms);
  EXPECT_TRUE(timing.unit_allowed(t0 + 11ms, /*input_waiting=*/false)) << "idle: no pause";
  EXPECT_FALSE(timing.unit_allowed(t0 + 39ms, /*input_waiting=*/true));
  EXPECT_TRUE(timing.unit_allowed(t0 + 40ms, /*input_waiting=*/true)) << "10 ms of 40";
}

}  // namespace
}  // namespace slicestream
