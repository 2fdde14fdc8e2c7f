// A callback run every interval on an io_context until stop(): the server's stats report.
//
// steady_timer::cancel() cannot recall a wait that has already completed: its handler is queued
// with success and runs after the cancel. A timer that re-arms in its handler would then tick
// once more and wait again, so io_context::run() never returned and a drained server did not exit
// on SIGTERM. stop() therefore also sets a flag the handler checks first.
#pragma once

// Boost.Asio 1.74's scheduler trips GCC 12's -Wnull-dereference once inlined (a false positive in
// library code); silenced for these headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#pragma GCC diagnostic pop
#include <chrono>
#include <functional>
#include <utility>

namespace slicestream {

class PeriodicTimer {
 public:
  // An interval of zero or less never ticks.
  PeriodicTimer(boost::asio::io_context& io, std::chrono::nanoseconds interval,
                std::function<void()> tick)
      : timer_(io), interval_(interval), tick_(std::move(tick)) {}

  void start() {
    if (interval_.count() <= 0 || stopped_) return;
    timer_.expires_after(interval_);
    timer_.async_wait([this](const boost::system::error_code& error) {
      if (error || stopped_) return;
      tick_();
      start();
    });
  }

  // On the io_context's thread (post it from others): no tick runs after it, and the timer
  // leaves no work behind, so run() can return.
  void stop() {
    stopped_ = true;
    timer_.cancel();
  }

 private:
  boost::asio::steady_timer timer_;
  std::chrono::nanoseconds interval_;
  std::function<void()> tick_;
  bool stopped_ = false;
};

}  // namespace slicestream
