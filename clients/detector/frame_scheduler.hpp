// Frame-rate control: frame k is due at start + k / fps on a steady clock. Deadlines are computed
// from the start time, never by adding periods, so the schedule does not drift; a frame that is
// late (the sender was blocked by back-pressure) goes out at once and is counted, never skipped.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace slicestream::detector {

// Injected so that tests can drive the scheduler with a fake clock.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::nanoseconds now() const = 0;
  virtual void sleep_until(std::chrono::nanoseconds time) = 0;
};

// std::chrono::steady_clock (CLOCK_MONOTONIC on Linux, the clock the server stamps arrivals with).
class SteadyClock final : public Clock {
 public:
  std::chrono::nanoseconds now() const override;
  void sleep_until(std::chrono::nanoseconds time) override;
};

struct ScheduleStats {
  std::uint64_t late_frames = 0;  // sent more than one frame period after their due time
  std::chrono::nanoseconds max_lateness{0};
};

class FrameScheduler {
 public:
  // fps = 0: no waiting (as fast as possible). `stop`, when set, ends a wait early.
  FrameScheduler(double fps, Clock& clock, const std::atomic<bool>* stop = nullptr);

  void start();  // frame 0 is due now
  // Waits until frame `frame` is due and returns its due time (its acquisition timestamp); with
  // fps = 0, returns the current time. Returns early (the current time) when `stop` is set.
  std::chrono::nanoseconds wait_for(std::uint64_t frame);
  std::chrono::nanoseconds due_time(std::uint64_t frame) const;
  const ScheduleStats& stats() const { return stats_; }
  double fps() const { return fps_; }

 private:
  double fps_;
  Clock& clock_;
  const std::atomic<bool>* stop_;
  std::chrono::nanoseconds start_{0};
  ScheduleStats stats_;
};

}  // namespace slicestream::detector
