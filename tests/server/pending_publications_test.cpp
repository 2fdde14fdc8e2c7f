// What the slices endpoint holds while a subscriber has no room: the latest publication of each
// stream in its place in line, every event in order, a moved slice first.
#include "server/pending_publications.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace slicestream {
namespace {

using Stream = PendingPublications::Stream;
using Clock = PendingPublications::Clock;

OutgoingPublication named(const std::string& name) {
  OutgoingPublication publication;
  publication.topic = "slice";
  publication.header = name;
  publication.payload = zmq::message_t(name.data(), name.size());
  return publication;
}

// Pops everything, returning the headers in the order they would be sent.
std::vector<std::string> drain(PendingPublications& pending) {
  std::vector<std::string> order;
  while (!pending.empty()) {
    const OutgoingPublication& front = pending.front();
    EXPECT_EQ(front.payload->to_string(), front.header) << "header and payload travel together";
    order.push_back(front.header);
    pending.pop_front();
  }
  return order;
}

TEST(PendingPublications, TheLatestOfEachStreamWaitsInItsPlaceInLine) {
  PendingPublications pending;
  const Clock::time_point t0 = Clock::now();
  EXPECT_FALSE(pending.put_latest(Stream::kSlice, 0, named("slice 0 v1"), false, t0));
  EXPECT_FALSE(pending.put_latest(Stream::kSlice, 1, named("slice 1 v1"), false, t0));
  EXPECT_FALSE(pending.put_latest(Stream::kRefined, 0, named("refined 0 v1"), false, t0));
  EXPECT_FALSE(pending.put_latest(Stream::kPreview, 0, named("preview v1"), false, t0));
  const Clock::time_point t1 = t0 + std::chrono::milliseconds(5);
  EXPECT_TRUE(pending.put_latest(Stream::kSlice, 0, named("slice 0 v2"), false, t1));
  EXPECT_TRUE(pending.put_latest(Stream::kSlice, 0, named("slice 0 v3"), false, t1));
  EXPECT_TRUE(pending.put_latest(Stream::kPreview, 0, named("preview v2"), false, t1));
  EXPECT_EQ(pending.size(), 4u) << "one per stream: slice 0, slice 1, refined 0, preview";
  EXPECT_EQ(pending.front_since(), t0) << "a replacement keeps the waiting time of its place";
  EXPECT_EQ(drain(pending),
            (std::vector<std::string>{"slice 0 v3", "slice 1 v1", "refined 0 v1", "preview v2"}));
  // Once sent, a stream starts again at the end of the line.
  EXPECT_FALSE(pending.put_latest(Stream::kSlice, 0, named("slice 0 v4"), false, t1));
  EXPECT_EQ(drain(pending), std::vector<std::string>{"slice 0 v4"});
}

TEST(PendingPublications, EventsAreNeverMergedAndKeepTheirOrder) {
  PendingPublications pending;
  const Clock::time_point now = Clock::now();
  pending.put_event(named("event 1"), now);
  pending.put_latest(Stream::kSlice, 2, named("slice 2 v1"), false, now);
  pending.put_event(named("event 2"), now);
  pending.put_event(named("event 2"), now);  // the same text twice is still two events
  EXPECT_TRUE(pending.put_latest(Stream::kSlice, 2, named("slice 2 v2"), false, now));
  EXPECT_EQ(drain(pending),
            (std::vector<std::string>{"event 1", "slice 2 v2", "event 2", "event 2"}));
}

TEST(PendingPublications, AMovedSliceGoesBeforeEverythingWaiting) {
  PendingPublications pending;
  const Clock::time_point now = Clock::now();
  pending.put_latest(Stream::kSlice, 1, named("slice 1 v1"), false, now);
  pending.put_event(named("event"), now);
  pending.put_latest(Stream::kSlice, 0, named("slice 0 old place"), false, now);
  pending.put_latest(Stream::kSlice, 2, named("slice 2 v1"), false, now);
  // Slice 0 moves: its new image replaces the old place's and jumps the line.
  EXPECT_TRUE(pending.put_latest(Stream::kSlice, 0, named("slice 0 moved"), true, now));
  // Another slice moves: moved slices keep their own order.
  EXPECT_FALSE(pending.put_latest(Stream::kSlice, 3, named("slice 3 moved"), true, now));
  // A routine update of a moved slice still waiting replaces it in the front lane.
  EXPECT_TRUE(pending.put_latest(Stream::kSlice, 0, named("slice 0 moved, v2"), false, now));
  EXPECT_EQ(pending.size(), 5u);
  EXPECT_EQ(drain(pending), (std::vector<std::string>{"slice 0 moved, v2", "slice 3 moved",
                                                      "slice 1 v1", "event", "slice 2 v1"}));
}

TEST(PendingPublications, AnErasedStreamLeavesTheLineAndTheRestKeepTheirOrder) {
  PendingPublications pending;
  const Clock::time_point t0 = Clock::now();
  pending.put_latest(Stream::kSlice, 0, named("slice 0"), false, t0);
  pending.put_latest(Stream::kPreview, 0, named("preview"), false, t0);
  pending.put_latest(Stream::kSlice, 1, named("slice 1 moved"), true, t0);
  pending.put_latest(Stream::kRefined, 0, named("refined 0"), false, t0);
  EXPECT_EQ(pending.front_key(), PendingPublications::Key(Stream::kSlice, 1));
  pending.erase({Stream::kSlice, 1});  // from the moved lane
  pending.erase({Stream::kSlice, 0});
  pending.erase({Stream::kSlice, 7});  // none waits: nothing happens
  EXPECT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending.front_key(), PendingPublications::Key(Stream::kPreview, 0));
  // An erased stream waits anew at the back.
  EXPECT_FALSE(pending.put_latest(Stream::kSlice, 0, named("slice 0 again"), false, t0));
  EXPECT_EQ(drain(pending), (std::vector<std::string>{"preview", "refined 0", "slice 0 again"}));
}

}  // namespace
}  // namespace slicestream
