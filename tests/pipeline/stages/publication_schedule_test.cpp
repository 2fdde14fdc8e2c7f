// PublicationSchedule: dirty slices are due at once without a rate, at most `rate` times a second
// with one, all of them when forced; sequences go on across a slice set anew and restart after
// it went away.
#include "pipeline/stages/publication_schedule.hpp"

#include <gtest/gtest.h>

namespace slicestream {
namespace {

using namespace std::chrono_literals;
using Clock = PublicationSchedule::Clock;
using Ids = std::vector<std::uint32_t>;

TEST(PublicationSchedule, WithoutARateEveryDirtySliceIsDueAtOnce) {
  PublicationSchedule schedule;
  const Clock::time_point now = Clock::now();
  EXPECT_FALSE(schedule.any_dirty());
  EXPECT_EQ(schedule.next_due(0), Clock::time_point::max());
  schedule.mark_dirty(4);
  schedule.mark_dirty(1);
  EXPECT_TRUE(schedule.any_dirty());
  EXPECT_EQ(schedule.due(now, 0, false), (Ids{1, 4})) << "in id order";
  EXPECT_LE(schedule.next_due(0), now);
  EXPECT_EQ(schedule.published(1, now), 1u);
  EXPECT_EQ(schedule.due(now, 0, false), Ids{4});
  EXPECT_EQ(schedule.published(4, now), 1u);
  EXPECT_FALSE(schedule.any_dirty());
}

TEST(PublicationSchedule, ARateHoldsASliceBackUntilItsTimeComes) {
  PublicationSchedule schedule;
  const Clock::time_point t0 = Clock::now();
  schedule.mark_dirty(2);
  EXPECT_EQ(schedule.due(t0, 10, false), Ids{2}) << "never published: due at once";
  EXPECT_EQ(schedule.published(2, t0), 1u);
  schedule.mark_dirty(2);
  EXPECT_TRUE(schedule.due(t0 + 50ms, 10, false).empty()) << "10 Hz: 100 ms apart";
  EXPECT_EQ(schedule.next_due(10), t0 + 100ms);
  EXPECT_EQ(schedule.due(t0 + 50ms, 10, true), Ids{2}) << "forced";
  EXPECT_EQ(schedule.due(t0 + 100ms, 10, false), Ids{2});
  EXPECT_EQ(schedule.published(2, t0 + 100ms), 2u);
}

TEST(PublicationSchedule, SequencesGoOnForASliceSetAnewAndRestartAfterItWentAway) {
  PublicationSchedule schedule;
  const Clock::time_point t0 = Clock::now();
  schedule.mark_dirty(3);
  schedule.published(3, t0);
  schedule.mark_dirty(3);
  schedule.restart(3);
  EXPECT_FALSE(schedule.any_dirty()) << "set anew: clean";
  schedule.mark_dirty(3);
  EXPECT_EQ(schedule.due(t0 + 1ms, 1, false), Ids{3}) << "and due at once, whatever the rate";
  EXPECT_EQ(schedule.published(3, t0 + 1ms), 2u);
  schedule.forget(3);
  schedule.mark_dirty(3);
  EXPECT_EQ(schedule.published(3, t0 + 2ms), 1u);
  schedule.mark_dirty(5);
  schedule.clear_dirty();
  EXPECT_FALSE(schedule.any_dirty());
}

TEST(PublicationSchedule, AnUpdateHeldBackAndReplacedIsReportedCoalesced) {
  PublicationSchedule schedule;
  const Clock::time_point t0 = Clock::now();
  EXPECT_FALSE(schedule.mark_dirty(1));
  EXPECT_FALSE(schedule.mark_dirty(1)) << "two updates before any chance to publish: one batch";
  schedule.held_back(1);
  EXPECT_EQ(schedule.next_due(0), Clock::time_point::max())
      << "held back: due already, and what it waits for is not a time";
  EXPECT_EQ(schedule.due(t0, 0, false), Ids{1}) << "still due";
  EXPECT_TRUE(schedule.mark_dirty(1)) << "the held-back update is replaced";
  EXPECT_LE(schedule.next_due(0), t0) << "the new update is due on its own terms";
  EXPECT_FALSE(schedule.mark_dirty(1)) << "counted once";
  schedule.held_back(1);
  EXPECT_EQ(schedule.published(1, t0), 1u) << "no gap in the sequence";
  EXPECT_FALSE(schedule.mark_dirty(1)) << "published: nothing held back";
  schedule.held_back(1);
  EXPECT_TRUE(schedule.restart(1)) << "a slice set anew replaces the held-back update";
  EXPECT_FALSE(schedule.any_dirty());
}

}  // namespace
}  // namespace slicestream
