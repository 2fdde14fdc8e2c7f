// The transport's ceiling with the real sender and the real process layout: the
// slicestream-detector, in its own process as in an end-to-end step, streams one scan to a bare
// PULL socket in this process that receives every part and drops it. Beside the in-process
// PUSH/PULL (bare_push_pull.hpp: the sending code on one constant frame, both ends in one
// process), this tells the server's share of an end-to-end step from the transport's and the
// detector's: the only difference to a step is the receiver.
#pragma once

#include <cstdint>
#include <string>

#include "ingest_step.hpp"
#include "thread_cpu.hpp"

namespace slicestream::bench {

struct DetectorBareResult {
  bool ok = false;
  std::string failure;         // what went wrong (with the detector log's tail) when !ok
  std::uint64_t received = 0;  // frame messages (darks, flats and projections)
  // The same measure as a step's (scan_progress.hpp), over the frames received.
  double sustained_fps = 0;
  // Thread load between 20 % and 90 % of the frames (thread_cpu.hpp): this process's (the PULL
  // socket's ZeroMQ I/O thread) and the detector's.
  ThreadLoad receiver_threads;
  ThreadLoad detector_threads;
};

// Streams `c.frames` projections of `c.preset` at `c.offered_fps` (0: as fast as back-pressure
// allows) over `c.transport`, without confirmation; the PULL socket's receive HWM is `c.data_hwm`.
// `c.server_path` and the server's settings are not used.
DetectorBareResult measure_detector_to_bare_pull(const StepConfig& c);

}  // namespace slicestream::bench
