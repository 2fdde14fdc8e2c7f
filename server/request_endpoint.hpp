// The requests endpoint: a ROUTER socket (bound) owned by one thread. Every request gets exactly
// one reply [Reply] or [Reply][float32 payload] (GetSlice): refused requests at once from this
// thread (INVALID_ARGUMENT etc.; request_id 0 when undecodable), the others when the pipeline
// answers. Pipeline replies arrive through a ReplyQueue whose eventfd sits in this thread's
// zmq_poll, so they leave immediately. On stop, requests still pending and those still in the
// socket's receive queue are answered UNAVAILABLE, and the socket lingers a moment so that the
// replies leave.
//
// Envelope: a DEALER sends [Request] (ROUTER sees [identity][Request]); a REQ socket or a
// REQ-style DEALER sends ["", Request]. The reply carries the same envelope back.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include "server/codec/wire_error.hpp"
#include "server/codec/wire_limits.hpp"
#include "server/log_throttle.hpp"
#include "server/pipeline_port.hpp"
#include "server/reply_queue.hpp"
#include "server/requester_backlog.hpp"
#include "server/server_counters.hpp"
#include "server/socket_security.hpp"
#include "server/transport_monitor.hpp"
#include "slicestream.pb.h"

namespace slicestream {

class RequestEndpoint {
 public:
  // Binds at once (throws std::runtime_error naming the address on failure).
  RequestEndpoint(zmq::context_t& context, const std::string& address, const WireLimits& limits,
                  const ServerSecurity& security, PipelinePort& pipeline, ServerCounters& counters);
  ~RequestEndpoint();
  RequestEndpoint(const RequestEndpoint&) = delete;
  RequestEndpoint& operator=(const RequestEndpoint&) = delete;

  const std::string& address() const { return address_; }  // as bound (resolved port)
  void watch_transport(TransportMonitor& monitor);         // before start()
  void start();
  void stop();  // answers pending requests UNAVAILABLE, then ends the thread

 private:
  struct Pending {
    std::vector<zmq::message_t> envelope;
    std::uint64_t request_id = 0;
    std::shared_ptr<const void> backlog;  // a GetSlice's reservation in the requester's backlog
  };

  void run();
  void receive_request();
  void reject(std::vector<zmq::message_t> envelope, std::uint64_t request_id,
              const WireError& error);
  void deliver_completed();
  void complete(Pending pending, CommandReply reply);
  void send_reply(std::vector<zmq::message_t>& envelope, const v1::Reply& reply,
                  zmq::message_t* payload);
  void answer_pending_unavailable();
  // After the stop: the requests still in the receive queue (the stopped pipeline answers them
  // UNAVAILABLE at once).
  void answer_queued_requests();

  zmq::socket_t socket_;
  std::string address_;
  WireLimits limits_;
  PipelinePort& pipeline_;
  ServerCounters& counters_;
  std::shared_ptr<ReplyQueue> replies_;
  RequesterBacklog backlog_;
  std::unordered_map<std::uint64_t, Pending> pending_;  // by token; endpoint thread only
  std::uint64_t next_token_ = 1;
  LogThrottle log_throttle_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slicestream
