#include "clients/detector/frame_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "kernels/steady_clock.hpp"

namespace slicestream::detector {

namespace {
// Sleeps are cut into slices this long so that Ctrl-C ends a slow schedule promptly.
constexpr std::chrono::nanoseconds kMaxSleepSlice = std::chrono::milliseconds(50);
}  // namespace

std::chrono::nanoseconds SteadyClock::now() const {
  return std::chrono::nanoseconds(steady_now_ns());
}

void SteadyClock::sleep_until(std::chrono::nanoseconds time) {
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(time)));
}

FrameScheduler::FrameScheduler(double fps, Clock& clock, const std::atomic<bool>* stop)
    : fps_(fps), clock_(clock), stop_(stop) {
  if (!std::isfinite(fps) || fps < 0) throw std::invalid_argument("--fps must be >= 0");
}

void FrameScheduler::start() {
  start_ = clock_.now();
  stats_ = {};
}

std::chrono::nanoseconds FrameScheduler::due_time(std::uint64_t frame) const {
  if (fps_ == 0) return start_;
  // One multiplication per frame from the start: no accumulated rounding (long double keeps
  // nanosecond precision for any realistic scan length).
  const long double offset_ns =
      static_cast<long double>(frame) * 1e9L / static_cast<long double>(fps_);
  return start_ + std::chrono::nanoseconds(std::llround(offset_ns));
}

std::chrono::nanoseconds FrameScheduler::wait_for(std::uint64_t frame) {
  if (fps_ == 0) return clock_.now();
  const std::chrono::nanoseconds due = due_time(frame);
  std::chrono::nanoseconds now = clock_.now();
  while (now < due) {
    if (stop_ && stop_->load()) return now;
    clock_.sleep_until(std::min(due, now + kMaxSleepSlice));
    now = clock_.now();
  }
  const std::chrono::nanoseconds lateness = now - due;
  const std::chrono::nanoseconds period(std::llround(1e9 / fps_));
  if (lateness > period) {
    ++stats_.late_frames;
    stats_.max_lateness = std::max(stats_.max_lateness, lateness);
  }
  return due;
}

}  // namespace slicestream::detector
