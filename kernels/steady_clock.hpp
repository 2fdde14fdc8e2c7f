// The one clock for arrival, publication, progress and benchmark times: the steady clock
// (CLOCK_MONOTONIC on Linux), comparable between the threads and processes of one machine; as
// nanoseconds for timestamps, as seconds for elapsed times. Here at the bottom of the folder map so
// that the pipeline, the server, the clients and the benchmarks read it alike.
#pragma once

#include <chrono>
#include <cstdint>

namespace slicestream {

inline std::uint64_t steady_now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

using SteadyClock = std::chrono::steady_clock;

// Seconds elapsed since `start`.
inline double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// A number of seconds as a clock duration (for deadlines).
inline SteadyClock::duration clock_duration(double seconds) {
  return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace slicestream
