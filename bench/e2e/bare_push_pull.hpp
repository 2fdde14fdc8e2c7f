// The transport's own ceiling: the detector's sending code (the client library's DataSender,
// [DataHeader][payload] with the payload copied once into the ZeroMQ message) pushing frames to a
// bare PULL socket that receives every part and drops it, with the high-water marks of the real
// detector and server, on its own ZeroMQ context per side (as two processes have).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace slicestream::bench {

struct BareOptions {
  std::string endpoint;  // tcp://127.0.0.1:PORT or ipc://PATH, bound by the PULL side
  int rows = 0;
  int cols = 0;  // uint16 frames: rows * cols * 2 payload bytes
  int send_hwm = 0;
  int receive_hwm = 0;
  double seconds = 1;               // measured time after the warm-up
  std::uint64_t warmup_frames = 0;  // received before the clock starts
};

struct BareResult {
  std::uint64_t frames = 0;  // received in the measured interval
  double seconds = 0;
  double frames_per_s = 0;
  double bytes_per_s = 0;  // payload bytes
};

// Throws std::runtime_error (zmq errors included) when the endpoint cannot be used.
BareResult measure_bare_push_pull(const BareOptions& options);

}  // namespace slicestream::bench
