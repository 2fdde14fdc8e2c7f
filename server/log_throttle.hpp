// Keeps a flood of bad input from flooding the log: at most `per_second` messages per second,
// then one line saying how many were suppressed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace slicestream {

class LogThrottle {
 public:
  explicit LogThrottle(int per_second = 5) : per_second_(per_second) {}

  // True when this message may be logged now. `suppressed` is set to the number of messages
  // swallowed since the last one allowed (so the caller can mention them).
  bool allow(std::uint64_t* suppressed) {
    const auto now = std::chrono::steady_clock::now();
    if (now - window_start_ >= std::chrono::seconds(1)) {
      window_start_ = now;
      in_window_ = 0;
    }
    if (in_window_ >= per_second_) {
      ++suppressed_;
      return false;
    }
    ++in_window_;
    *suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  int per_second_;
  int in_window_ = 0;
  std::uint64_t suppressed_ = 0;
  std::chrono::steady_clock::time_point window_start_{};
};

}  // namespace slicestream
