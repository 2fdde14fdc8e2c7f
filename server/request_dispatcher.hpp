// The one path of a slicestream.v1 Request into the pipeline and of its answer back, shared by
// every endpoint that takes requests (the ZeroMQ requests endpoint, the WebSocket sessions and the
// HTTP status route): the request codec's validation, submission through the PipelinePort, the
// reply codec and the request counters.
// Thread-safe. The endpoints keep only their transport (envelopes, sessions, framing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/codec/reply_codec.hpp"
#include "server/codec/wire_error.hpp"
#include "server/codec/wire_limits.hpp"
#include "server/log_throttle.hpp"
#include "server/metrics/request_counters.hpp"
#include "server/pipeline_port.hpp"
#include "server/server_counters.hpp"
#include "slicestream.pb.h"

namespace slicestream {

// What an endpoint keeps of a request in flight.
struct RequestTicket {
  std::string endpoint;
  std::string kind;
  std::uint64_t request_id = 0;
};

class RequestDispatcher {
 public:
  RequestDispatcher(const WireLimits& limits, PipelinePort& pipeline, ServerCounters& counters,
                    RequestCounters& request_counters);

  // Either the request went to the pipeline (`ticket`: `on_reply` runs exactly once, on a
  // pipeline thread or, when the pipeline refuses at once, inside submit), or it was refused
  // here (`refusal`; `on_reply` never runs).
  struct Submission {
    std::optional<RequestTicket> ticket;
    WireReply refusal;
  };
  // A serialized Request (size limit, then the protobuf parse).
  Submission submit(const std::string& endpoint, const void* data, std::size_t size,
                    ReplyCallback on_reply);
  Submission submit(const std::string& endpoint, const v1::Request& request,
                    ReplyCallback on_reply);

  // For endpoints without a thread of their own to finish replies on: `on_reply` receives the
  // finished wire reply, refusals included, exactly once (inside this call for a refusal, else on
  // a pipeline thread).
  void call(const std::string& endpoint, const v1::Request& request,
            std::function<void(WireReply)> on_reply);

  // A request the endpoint refused before it reached the codec (framing, JSON, rate limits):
  // counted and logged like the codec's refusals.
  WireReply refuse(const std::string& endpoint, std::uint64_t request_id, const std::string& kind,
                   const WireError& error);

  // The pipeline's answer to `ticket` as a wire reply (any thread, once per ticket).
  WireReply finish(const RequestTicket& ticket, CommandReply reply);
  // For a submitted request whose answer can no longer be delivered because its endpoint stops.
  WireReply abandon(const RequestTicket& ticket);

  const WireLimits& limits() const { return limits_; }

 private:
  struct Prepared {
    RequestTicket ticket;
    std::optional<Command> command;  // absent: refused
    WireReply refusal;
  };
  // Validates the request.
  Prepared prepare(const std::string& endpoint, const v1::Request& request);
  // Hands the command to the pipeline; `on_reply` runs exactly once.
  void send(Command command, ReplyCallback on_reply);

  const WireLimits limits_;
  PipelinePort& pipeline_;
  ServerCounters& counters_;
  RequestCounters& request_counters_;
  std::mutex mutex_;  // the log throttle
  LogThrottle log_throttle_;
};

}  // namespace slicestream
