// The requests endpoint: a ROUTER socket (bound) owned by one thread. Every request gets exactly
// one reply [Reply] or [Reply][float32 payload] (GetSlice): refused requests at once from this
// thread (INVALID_ARGUMENT etc.; request_id 0 when undecodable), the others when the pipeline
// answers. Decoding, submission and reply encoding are the RequestDispatcher's, shared with the
// other endpoints that take requests. Pipeline replies arrive through a ReplyQueue whose eventfd
// sits in this thread's zmq_poll, so they leave immediately. On stop, requests still pending are
// answered UNAVAILABLE.
//
// Envelope: a DEALER sends [Request] (ROUTER sees [identity][Request]); a REQ socket or a
// REQ-style DEALER sends ["", Request]. The reply carries the same envelope back.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include "server/codec/wire_error.hpp"
#include "server/reply_queue.hpp"
#include "server/request_dispatcher.hpp"
#include "server/server_counters.hpp"
#include "slicestream.pb.h"

namespace slicestream {

class RequestEndpoint {
 public:
  // Binds at once (throws std::runtime_error naming the address on failure).
  RequestEndpoint(zmq::context_t& context, const std::string& address,
                  RequestDispatcher& dispatcher, ServerCounters& counters);
  ~RequestEndpoint();
  RequestEndpoint(const RequestEndpoint&) = delete;
  RequestEndpoint& operator=(const RequestEndpoint&) = delete;

  const std::string& address() const { return address_; }  // as bound (resolved port)
  void start();
  void stop();  // answers pending requests UNAVAILABLE, then ends the thread

 private:
  struct Pending {
    std::vector<zmq::message_t> envelope;
    std::optional<RequestTicket> ticket;  // set once submitted
  };

  void run();
  void receive_request();
  void deliver_completed();
  void send_reply(std::vector<zmq::message_t>& envelope, WireReply reply);
  void answer_pending_unavailable();

  zmq::socket_t socket_;
  std::string address_;
  RequestDispatcher& dispatcher_;
  ServerCounters& counters_;
  std::shared_ptr<ReplyQueue> replies_;
  std::unordered_map<std::uint64_t, Pending> pending_;  // by token; endpoint thread only
  std::uint64_t next_token_ = 1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slicestream
