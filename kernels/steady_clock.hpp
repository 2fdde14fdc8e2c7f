// The one clock for arrival, publication and progress times: nanoseconds on the steady clock
// (CLOCK_MONOTONIC on Linux), comparable between the threads and processes of one machine. Here
// at the bottom of the folder map so that the pipeline, the server and the clients read it alike.
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
