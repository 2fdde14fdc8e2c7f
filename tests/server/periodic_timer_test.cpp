// The stats report's timer: it ticks every interval until stopped, and stop() ends it even when a
// tick is already due (its wait completed, its handler queued), so that io_context::run() returns
// and a drained server exits on SIGTERM.
#include "server/periodic_timer.hpp"

#include <gtest/gtest.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/post.hpp>
#pragma GCC diagnostic pop
#include <chrono>
#include <future>
#include <thread>

namespace slicestream {
namespace {

using std::chrono::milliseconds;

// Runs `io` on a thread of its own; false when run() has not returned within `limit` (the
// io_context is then stopped, so that the test ends either way).
bool runs_to_completion(boost::asio::io_context& io, milliseconds limit) {
  auto done = std::async(std::launch::async, [&] { io.run(); });
  if (done.wait_for(limit) == std::future_status::ready) return true;
  io.stop();
  done.wait();
  return false;
}

TEST(PeriodicTimer, TicksEveryIntervalUntilStopped) {
  boost::asio::io_context io;
  int ticks = 0;
  PeriodicTimer* self = nullptr;
  PeriodicTimer timer(io, milliseconds(2), [&] {
    if (++ticks == 3) self->stop();
  });
  self = &timer;
  const auto start = std::chrono::steady_clock::now();
  timer.start();
  ASSERT_TRUE(runs_to_completion(io, milliseconds(5000)));
  EXPECT_EQ(ticks, 3);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(6));
}

TEST(PeriodicTimer, StopAlsoEndsATickThatIsAlreadyDue) {
  for (int round = 0; round < 50; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    boost::asio::io_context io;
    int ticks = 0;
    int ticks_at_stop = -1;
    PeriodicTimer timer(io, milliseconds(1), [&] { ++ticks; });
    timer.start();
    // The first wait completes before the io_context runs; the stop is queued beside its handler.
    std::this_thread::sleep_for(milliseconds(3));
    boost::asio::post(io, [&] {
      timer.stop();
      ticks_at_stop = ticks;
    });
    ASSERT_TRUE(runs_to_completion(io, milliseconds(5000))) << "run() did not return after stop()";
    EXPECT_EQ(ticks, ticks_at_stop) << "a tick after stop()";
  }
}

TEST(PeriodicTimer, AnIntervalOfZeroNeverTicks) {
  boost::asio::io_context io;
  int ticks = 0;
  PeriodicTimer timer(io, milliseconds(0), [&] { ++ticks; });
  timer.start();
  ASSERT_TRUE(runs_to_completion(io, milliseconds(5000)));
  EXPECT_EQ(ticks, 0);
}

}  // namespace
}  // namespace slicestream
