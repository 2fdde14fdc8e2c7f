// ArrivalLog: arrival times wait for the first publication that shows their frame; in
// per-rotation mode until their rotation is shown; at most kMaxPending of them.
#include "pipeline/stages/arrival_log.hpp"

#include <gtest/gtest.h>

namespace slicestream {
namespace {

using Arrivals = std::vector<std::uint64_t>;

TEST(ArrivalLog, ShownFramesGoWithTheNextPublicationOnce) {
  ArrivalLog log;
  log.integrated(10, /*shown=*/true);
  log.integrated(20, /*shown=*/true);
  EXPECT_EQ(log.take_shown(), (Arrivals{10, 20}));
  EXPECT_TRUE(log.take_shown().empty()) << "published once";
}

TEST(ArrivalLog, PerRotationFramesWaitForTheirRotation) {
  ArrivalLog log;
  log.integrated(1, /*shown=*/false);
  log.integrated(2, /*shown=*/false);
  EXPECT_TRUE(log.take_shown().empty());
  log.rotation_shown();
  log.integrated(3, /*shown=*/false);
  EXPECT_EQ(log.take_shown(), (Arrivals{1, 2}));
  log.clear();
  log.rotation_shown();
  EXPECT_TRUE(log.take_shown().empty()) << "cleared with the scan";
}

TEST(ArrivalLog, BoundedByMaxPending) {
  ArrivalLog log;
  for (std::uint64_t i = 0; i < ArrivalLog::kMaxPending + 10; ++i)
    log.integrated(i + 1, true);
  EXPECT_EQ(log.take_shown().size(), ArrivalLog::kMaxPending);
}

}  // namespace
}  // namespace slicestream
