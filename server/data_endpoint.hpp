// The data endpoint: a PULL socket (bound) read by one thread that decodes every message and
// hands it to the pipeline. Pipeline::submit blocks while the pipeline is full; this thread then
// stops reading, ZeroMQ's receive queue fills up to RCVHWM and the detector's PUSH blocks at its
// SNDHWM: back-pressure reaches the sender, nothing is dropped. Refused messages are reported to
// the pipeline (counted by reason, logged, published as error events).
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "server/capture/capture_recorder.hpp"
#include "server/codec/wire_limits.hpp"
#include "server/log_throttle.hpp"
#include "server/pipeline_port.hpp"
#include "server/server_counters.hpp"

namespace slicestream {

class DataEndpoint {
 public:
  // Binds at once (throws std::runtime_error naming the address on failure).
  DataEndpoint(zmq::context_t& context, const std::string& address, int receive_hwm,
               const WireLimits& limits, PipelinePort& pipeline, ServerCounters& counters);
  ~DataEndpoint();
  DataEndpoint(const DataEndpoint&) = delete;
  DataEndpoint& operator=(const DataEndpoint&) = delete;

  const std::string& address() const { return address_; }  // as bound (resolved port)
  // Every message decoded is also shown to `capture` (before the pipeline takes it). Call before
  // start().
  void attach_capture(CaptureRecorder& capture) { capture_ = &capture; }
  void start();
  // Stops reading and returns when the thread has ended: a message being submitted is finished
  // first (with a pipeline that keeps running, that is bounded by one stage's work).
  void stop();

 private:
  void run();
  // Reads one whole message: its first parts into parts_ and the total part count.
  bool receive(std::size_t* part_count);
  void handle(std::size_t part_count);
  void show_capture(const DataMessage& message);

  zmq::socket_t socket_;
  std::string address_;
  WireLimits limits_;
  PipelinePort& pipeline_;
  ServerCounters& counters_;
  CaptureRecorder* capture_ = nullptr;
  LogThrottle capture_log_throttle_;
  std::vector<zmq::message_t> parts_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slicestream
