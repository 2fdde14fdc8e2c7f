// Wall-clock time for the benchmarks: the steady clock, the seconds since a start point, and a
// number of seconds as a clock duration.
#pragma once

#include <chrono>

namespace slicestream::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline Clock::duration clock_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace slicestream::bench
