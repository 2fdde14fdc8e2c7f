// The data endpoint: a PULL socket (bound) read by one thread that decodes every message and
// hands it to the pipeline. Pipeline::submit blocks while the pipeline is full; this thread then
// stops reading, ZeroMQ's receive queue fills up to RCVHWM and the detector's PUSH blocks at its
// SNDHWM: back-pressure reaches the sender, nothing is dropped. Refused messages are reported to
// the pipeline (counted by reason, logged, published as error events).
//
// Stopping unbinds first, so that nothing new arrives, then reads what ZeroMQ had already received
// (the socket's receive queue) until the socket stays quiet: with a draining pipeline every such
// message is handed on, otherwise the stopped pipeline counts each as a "shutdown" discard.
#pragma once

#include <atomic>
#include <chrono>
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
#include "server/socket_security.hpp"
#include "server/transport_monitor.hpp"

namespace slicestream {

class DataEndpoint {
 public:
  // Binds at once (throws std::runtime_error naming the address on failure).
  DataEndpoint(zmq::context_t& context, const std::string& address, int receive_hwm,
               const WireLimits& limits, const ServerSecurity& security, PipelinePort& pipeline,
               ServerCounters& counters);
  ~DataEndpoint();
  DataEndpoint(const DataEndpoint&) = delete;
  DataEndpoint& operator=(const DataEndpoint&) = delete;

  const std::string& address() const { return address_; }  // as bound (resolved port)
  // Every message decoded is also shown to `capture` (before the pipeline takes it). Call before
  // start().
  void attach_capture(CaptureRecorder& capture) { capture_ = &capture; }
  // The largest message part ZeroMQ lets through: twice the frame/header limit. A bigger one makes
  // ZeroMQ close the sender's connection before the part is read (its memory never allocated).
  std::size_t transport_cap_bytes() const { return transport_cap_; }
  // Before start(): connections, disconnects and handshake failures are counted by `monitor`;
  // each disconnect is reported to the pipeline as a warning (it may have cost a message over the
  // transport cap).
  void watch_transport(TransportMonitor& monitor);
  void start();
  // Stops reading (unbinds) and hands on or counts what was already received (see above); returns
  // when the thread has ended. A message being submitted is finished first (with a pipeline that
  // keeps running, that is bounded by one stage's work).
  void stop();

 private:
  void run();
  // Reads one whole message: its first parts into parts_ and the total part count.
  bool receive(std::size_t* part_count);
  void handle(std::size_t part_count);
  void show_capture(const DataMessage& message);
  enum class ReadOutcome { kRead, kNothing, kTerminated };
  // Waits up to `wait` for a message and hands it on (refusals and failures counted).
  ReadOutcome read_one(std::chrono::milliseconds wait);
  // After the stop: unbinds and reads the receive queue until it stays empty.
  void read_what_was_received();

  zmq::socket_t socket_;
  std::string address_;
  std::size_t transport_cap_ = 0;
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
