// The server clock used for arrival and publication times (CLOCK_MONOTONIC on Linux), which the
// codecs stamp into headers.
#pragma once

#include <chrono>
#include <cstdint>

namespace slicestream {

inline std::uint64_t steady_now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

}  // namespace slicestream
