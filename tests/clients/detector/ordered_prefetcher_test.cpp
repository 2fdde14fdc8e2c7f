#include "clients/detector/ordered_prefetcher.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>

namespace slicestream::detector {
namespace {

TEST(OrderedPrefetcher, DeliversEveryItemInOrderWhateverTheWorkerTiming) {
  std::atomic<std::uint64_t> produced{0};
  OrderedPrefetcher<std::uint64_t> items(200, 4, 8, [&](std::uint64_t i) {
    std::mt19937 rng(static_cast<unsigned>(i));
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
    ++produced;
    return i * i;
  });
  for (std::uint64_t i = 0; i < 200; ++i) {
    const std::optional<std::uint64_t> item = items.next();
    ASSERT_TRUE(item.has_value());
    EXPECT_EQ(*item, i * i);
  }
  EXPECT_FALSE(items.next().has_value());
  EXPECT_EQ(produced.load(), 200u);
}

TEST(OrderedPrefetcher, NeverRunsFurtherAheadThanTheLookahead) {
  std::atomic<std::uint64_t> taken{0};
  std::atomic<std::uint64_t> worst_ahead{0};
  OrderedPrefetcher<int> items(100, 3, 5, [&](std::uint64_t i) {
    const std::uint64_t ahead = i - taken.load();
    std::uint64_t seen = worst_ahead.load();
    while (ahead > seen && !worst_ahead.compare_exchange_weak(seen, ahead)) {
    }
    return static_cast<int>(i);
  });
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));  // a slow consumer
    ASSERT_EQ(items.next(), i);
    ++taken;
  }
  // Item i is claimed only while i < next_to_take + 5; `taken` lags next_to_take by at most 1.
  EXPECT_LE(worst_ahead.load(), 5u);
}

TEST(OrderedPrefetcher, AFailedItemIsRethrownInItsTurn) {
  OrderedPrefetcher<int> items(20, 2, 4, [](std::uint64_t i) {
    if (i == 5) throw std::runtime_error("frame 5 is unreadable");
    return static_cast<int>(i);
  });
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(items.next(), i);
  try {
    items.next();
    FAIL() << "expected the producer's exception";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "frame 5 is unreadable");
  }
  EXPECT_FALSE(items.next().has_value());
}

TEST(OrderedPrefetcher, CancelAndDestructionDoNotHang) {
  auto items = std::make_unique<OrderedPrefetcher<int>>(1000000, 2, 16, [](std::uint64_t i) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    return static_cast<int>(i);
  });
  ASSERT_EQ(items->next(), 0);
  items->cancel();
  EXPECT_FALSE(items->next().has_value());
  items.reset();
}

}  // namespace
}  // namespace slicestream::detector
