// What the HTTP endpoint needs from the rest of the server. Server implements it (server.cpp)
// over the RequestDispatcher that every endpoint shares, so a command from a browser takes the
// same path as one from slicestream-ctl; tests substitute a fake.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "pipeline/messages/command.hpp"
#include "server/codec/reply_codec.hpp"
#include "server/codec/wire_error.hpp"
#include "server/metrics/request_counters.hpp"
#include "slicestream.pb.h"

namespace slicestream {

class ServerPort {
 public:
  virtual ~ServerPort() = default;
  // Validates, submits and answers `request` (RequestDispatcher::call): `on_reply` runs exactly
  // once, on any thread (inside this call for a refusal).
  virtual void request(const std::string& endpoint, const v1::Request& request,
                       std::function<void(WireReply)> on_reply) = 0;
  // A message the endpoint refused before it was a Request (not JSON, too fast): counted, logged
  // and encoded like every refusal.
  virtual WireReply refuse(const std::string& endpoint, std::uint64_t request_id,
                           const std::string& kind, const WireError& error) = 0;
  // The pipeline's status for /metrics (not counted as a request): exactly once, any thread.
  virtual void status(std::function<void(CommandReply)> on_reply) = 0;
  virtual CounterMap server_counters() const = 0;
  virtual std::map<RequestCountKey, std::uint64_t> request_counts() const = 0;
};

}  // namespace slicestream
