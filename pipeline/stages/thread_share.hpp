// How much of the reconstruct stage's thread background work may take while frames are queued:
// the preview's units and the on-demand slices' units (GetSlice) share it. After a unit that took
// T, the next one waits (1 - share) / share x T while frames are queued, so background work takes
// at most `kShareUnderLoad` of the thread under load, and a frame waits at most one unit behind
// it. Idle, units run back to back.
#pragma once

#include <chrono>

namespace slicestream {

class ThreadShare {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr double kShareUnderLoad = 0.25;

  // Whether a background unit may run now.
  bool unit_allowed(Clock::time_point now, bool input_waiting) const {
    return !input_waiting || now >= next_unit_;
  }
  void unit_ran(Clock::time_point begin, Clock::time_point end) {
    const auto spent = std::chrono::duration_cast<std::chrono::nanoseconds>(end - begin);
    next_unit_ = end + std::chrono::duration_cast<std::chrono::nanoseconds>(
                           spent * ((1 - kShareUnderLoad) / kShareUnderLoad));
  }

 private:
  Clock::time_point next_unit_{};
};

}  // namespace slicestream
