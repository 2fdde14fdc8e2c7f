// PublicationBacklog: a slice is held back only while kMaxWaiting of its publications wait for
// the publish stage, and the publish stage is told to wake the reconstruct stage exactly when it
// takes a publication of a slice held back.
#include "pipeline/stages/publication_backlog.hpp"

#include <gtest/gtest.h>

namespace slicestream {
namespace {

TEST(PublicationBacklog, HoldsASliceBackOnlyWhileItsPublicationsPileUp) {
  PublicationBacklog backlog;
  EXPECT_FALSE(backlog.hold_back(3)) << "nothing waits";
  for (int k = 1; k < PublicationBacklog::kMaxWaiting; ++k) {
    backlog.queued(3);
    EXPECT_FALSE(backlog.hold_back(3)) << k << " waiting: the publish stage keeps up";
  }
  backlog.queued(3);
  EXPECT_TRUE(backlog.hold_back(3));
  EXPECT_FALSE(backlog.hold_back(4)) << "per slice";
  EXPECT_TRUE(backlog.taken(3)) << "held back: wake the reconstruct stage";
  EXPECT_FALSE(backlog.hold_back(3));
  EXPECT_FALSE(backlog.taken(3)) << "not held back: no wake";
}

TEST(PublicationBacklog, AWakeIsAskedForOncePerHold) {
  PublicationBacklog backlog;
  for (int k = 0; k < PublicationBacklog::kMaxWaiting + 1; ++k)
    backlog.queued(7);  // a forced publication may go beyond kMaxWaiting
  EXPECT_TRUE(backlog.hold_back(7));
  EXPECT_TRUE(backlog.hold_back(7)) << "asked again before the publish stage took one";
  EXPECT_TRUE(backlog.taken(7));
  EXPECT_FALSE(backlog.taken(7)) << "one wake per hold";
  EXPECT_FALSE(backlog.taken(7));
  EXPECT_FALSE(backlog.taken(7)) << "more taken than queued is ignored";
  EXPECT_FALSE(backlog.hold_back(7));
}

TEST(PublicationBacklog, HoldsEverySliceBackWhileTheSlicesTogetherFillTheRoom) {
  PublicationBacklog backlog(3);
  for (std::uint32_t id : {1u, 2u, 3u}) {
    EXPECT_FALSE(backlog.hold_back(id)) << "room for slice " << id;
    backlog.queued(id);
  }
  EXPECT_TRUE(backlog.hold_back(4)) << "3 of all slices wait: no room, although 4 has none";
  EXPECT_TRUE(backlog.hold_back(1));
  EXPECT_TRUE(backlog.taken(2)) << "held back for room: any slice taken wakes";
  EXPECT_FALSE(backlog.hold_back(4)) << "room again";
  backlog.queued(4);
  EXPECT_FALSE(backlog.taken(3)) << "nobody held back since";
}

}  // namespace
}  // namespace slicestream
