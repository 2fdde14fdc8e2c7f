#include "pipeline/bounded_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace slicestream {
namespace {

using namespace std::chrono_literals;

TEST(BoundedQueue, KeepsOrderAndBlocksTheProducerWhileFull) {
  BoundedQueue<int> queue(2);
  ASSERT_TRUE(queue.push(1));
  ASSERT_TRUE(queue.push(2));
  EXPECT_EQ(queue.size(), 2u);
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    int three = 3;
    queue.push(std::move(three));
    pushed = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(pushed) << "push must block while the queue is full";
  EXPECT_EQ(queue.pop(), 1);
  producer.join();
  EXPECT_TRUE(pushed);
  EXPECT_EQ(queue.pop(), 2);
  EXPECT_EQ(queue.pop(), 3);
}

TEST(BoundedQueue, CloseWakesBlockedProducersAndLetsConsumersDrain) {
  BoundedQueue<std::unique_ptr<int>> queue(1);
  ASSERT_TRUE(queue.push(std::make_unique<int>(7)));
  std::unique_ptr<int> refused = std::make_unique<int>(8);
  std::atomic<bool> result{true};
  std::thread producer([&] { result = queue.push(std::move(refused)); });
  std::this_thread::sleep_for(20ms);
  queue.close();
  producer.join();
  EXPECT_FALSE(result);
  ASSERT_NE(refused, nullptr) << "a refused item stays with the caller";
  EXPECT_EQ(*refused, 8);
  auto first = queue.pop();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(**first, 7);
  EXPECT_FALSE(queue.pop().has_value());
  EXPECT_TRUE(queue.exhausted());
}

TEST(BoundedQueue, PriorityLaneOvertakesAndHasItsOwnCapacity) {
  BoundedQueue<int> queue(2, 1);
  ASSERT_TRUE(queue.push(1));
  ASSERT_TRUE(queue.push(2));
  ASSERT_TRUE(queue.try_push_priority(10));  // never blocks, even with a full regular lane
  int refused = 11;
  EXPECT_FALSE(queue.try_push_priority(std::move(refused)));
  EXPECT_EQ(queue.pop(), 10);
  EXPECT_EQ(queue.pop(), 1);
}

TEST(BoundedQueue, PopUntilTimesOutWithoutItems) {
  BoundedQueue<int> queue(1);
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_FALSE(queue.pop_until(begin + 30ms).has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 30ms);
  EXPECT_FALSE(queue.exhausted());
  EXPECT_FALSE(queue.try_pop().has_value());
}

TEST(BoundedQueue, WakeEndsAWaitingPopUntilOnceAndIsNotLost) {
  BoundedQueue<int> queue(2);
  const auto far = BoundedQueue<int>::Clock::now() + 60s;
  std::thread waker([&] {
    std::this_thread::sleep_for(20ms);
    queue.wake();
  });
  EXPECT_FALSE(queue.pop_until(far).has_value()) << "woken long before the deadline";
  waker.join();
  EXPECT_FALSE(queue.exhausted());
  EXPECT_FALSE(queue.pop_until(BoundedQueue<int>::Clock::now() + 10ms).has_value())
      << "one wake, one early return: this one times out";
  queue.wake();  // before the consumer waits: kept for its next pop
  EXPECT_FALSE(queue.pop_until(far).has_value());
  queue.wake();
  ASSERT_TRUE(queue.push(7));
  EXPECT_EQ(queue.pop_until(far), 7) << "an item waiting comes with the wake";
}

TEST(BoundedQueue, DrainReturnsEverythingQueued) {
  BoundedQueue<int> queue(4, 2);
  queue.push(1);
  queue.push(2);
  queue.try_push_priority(3);
  const std::vector<int> left = queue.drain();
  EXPECT_EQ(left, (std::vector<int>{3, 1, 2}));
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace slicestream
