// The tomop data port: a PULL socket (or REP, for adapters that use REQ) read by one thread that
// maps every packet through TomopFeed onto the pipeline, beside the native data endpoint.
//
// Like the native endpoint it blocks in PipelinePort::submit while the pipeline is full, so
// back-pressure reaches the adapter (PUSH blocks at its high-water mark, REQ waits for the reply).
// A REP socket answers every packet, also refused and undecodable ones: int32 1 when the packet
// was accepted, int32 0 when it was refused (the adapters only wait for an answer; a refusal is
// also counted, logged and published as an event by the pipeline).
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "server/codec/wire_limits.hpp"
#include "server/pipeline_port.hpp"
#include "server/server_counters.hpp"
#include "server/tomop/tomop_feed.hpp"
#include "server/tomop_config.hpp"

namespace slicestream::tomop {

class TomopDataEndpoint {
 public:
  // Binds at once (throws std::runtime_error naming the address on failure).
  TomopDataEndpoint(zmq::context_t& context, const std::string& address, DataSocketKind kind,
                    int receive_hwm, const WireLimits& limits, PipelinePort& pipeline,
                    ServerCounters& counters);
  ~TomopDataEndpoint();
  TomopDataEndpoint(const TomopDataEndpoint&) = delete;
  TomopDataEndpoint& operator=(const TomopDataEndpoint&) = delete;

  const std::string& address() const { return address_; }  // as bound (resolved port)
  void start();
  void stop();  // returns when the thread has ended (a packet being submitted is finished first)

 private:
  void run();
  // Reads one message; false when none is waiting.
  bool receive_one();
  bool handle(zmq::message_t&& message);
  void answer(bool accepted);

  zmq::socket_t socket_;
  std::string address_;
  DataSocketKind kind_;
  TomopFeed feed_;
  PipelinePort& pipeline_;
  ServerCounters& counters_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slicestream::tomop
