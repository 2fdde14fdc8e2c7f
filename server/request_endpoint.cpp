#include "server/request_endpoint.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>
#include <type_traits>
#include <variant>

#include "kernels/steady_clock.hpp"
#include "server/codec/enum_codec.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/codec/reply_codec.hpp"
#include "server/codec/request_codec.hpp"
#include "server/socket_binding.hpp"

namespace slicestream {

namespace {
// How often the thread looks at the stop flag while nothing happens (replies wake it at once).
constexpr std::chrono::milliseconds kPollInterval{100};
// Identity, an optional delimiter, the request, and one more to say "too many parts".
constexpr std::size_t kPartsKept = 4;

// The name of a request that changes the reconstruction; empty for read-only ones.
const char* change_name(const Command& command) {
  return std::visit(
      [](const auto& c) -> const char* {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, SetSliceCommand>) return "SetSlice";
        if constexpr (std::is_same_v<T, RemoveSliceCommand>) return "RemoveSlice";
        if constexpr (std::is_same_v<T, ResetSlicesCommand>) return "ResetSlices";
        if constexpr (std::is_same_v<T, SetParametersCommand>) return "SetParameters";
        if constexpr (std::is_same_v<T, SetRefinementCommand>) return "SetRefinement";
        return "";
      },
      command);
}

CommandReply failure(StatusCode code, std::string message) {
  CommandReply reply;
  reply.status = Status{code, std::move(message)};
  return reply;
}

// The values of a GetSlice or GetVolume reply as the payload part (false: none). A reply whose
// values do not match its size becomes an INTERNAL error.
bool take_payload(CommandReply& reply, zmq::message_t& payload) {
  if (!reply.status.ok()) return false;
  std::vector<float>* values = nullptr;
  std::size_t expected = 0;
  std::string what;
  if (reply.slice) {
    const SliceImage& slice = *reply.slice;
    values = &reply.slice->values;
    expected = slice.width > 0 && slice.height > 0
                   ? static_cast<std::size_t>(slice.width) * static_cast<std::size_t>(slice.height)
                   : 0;
    what = std::to_string(slice.width) + " x " + std::to_string(slice.height) + " slice";
  } else if (reply.volume) {
    const VolumeChunk& chunk = *reply.volume;
    values = &reply.volume->values;
    expected = chunk.size_x > 0 && chunk.size_y > 0 && chunk.plane_count > 0
                   ? static_cast<std::size_t>(chunk.size_x) *
                         static_cast<std::size_t>(chunk.size_y) *
                         static_cast<std::size_t>(chunk.plane_count)
                   : 0;
    what = std::to_string(chunk.plane_count) + " planes of " + std::to_string(chunk.size_x) +
           " x " + std::to_string(chunk.size_y);
  } else {
    return false;
  }
  if (expected == 0 || values->size() != expected) {
    reply =
        failure(StatusCode::kInternal,
                "the pipeline returned " + std::to_string(values->size()) + " values for " + what);
    return false;
  }
  payload = payload_message(std::move(*values));
  return true;
}

// Who sent a message: ZeroMQ's peer address (tcp), else the transport's word for it.
std::string requester_of(const zmq::message_t& message) {
  const char* peer = zmq_msg_gets(const_cast<zmq_msg_t*>(message.handle()), "Peer-Address");
  if (peer == nullptr || *peer == '\0') return "a local peer";
  return std::string("peer ") + peer;
}

}  // namespace

RequestEndpoint::RequestEndpoint(zmq::context_t& context, const std::string& address,
                                 const WireLimits& limits, PipelinePort& pipeline,
                                 ServerCounters& counters)
    : socket_(context, zmq::socket_type::router),
      limits_(limits),
      pipeline_(pipeline),
      counters_(counters),
      replies_(std::make_shared<ReplyQueue>()) {
  socket_.set(zmq::sockopt::linger, 0);
  // Fail loudly (EHOSTUNREACH) instead of silently when the requester has gone: counted.
  socket_.set(zmq::sockopt::router_mandatory, true);
  socket_.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(2 * limits.max_request_bytes));
  address_ = bind_endpoint(socket_, address, "requests");
}

RequestEndpoint::~RequestEndpoint() {
  stop();
}

void RequestEndpoint::start() {
  thread_ = std::thread([this] { run(); });
}

void RequestEndpoint::stop() {
  stopping_ = true;
  replies_->wake();
  if (thread_.joinable()) thread_.join();
}

void RequestEndpoint::run() {
  spdlog::info("requests endpoint listening on {} (ROUTER)", address_);
  while (!stopping_) {
    try {
      zmq::pollitem_t items[2] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                                  {nullptr, replies_->fd(), ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, kPollInterval);
      if ((items[1].revents & ZMQ_POLLIN) != 0) deliver_completed();
      if ((items[0].revents & ZMQ_POLLIN) != 0) receive_request();
    } catch (const zmq::error_t& error) {
      if (error.num() == ETERM) break;
      spdlog::error("requests endpoint: {}", error.what());
    } catch (const std::exception& error) {
      spdlog::error("requests endpoint: {}", error.what());
    }
  }
  try {
    deliver_completed();
    answer_pending_unavailable();
  } catch (const std::exception& error) {
    spdlog::error("requests endpoint while stopping: {}", error.what());
  }
  replies_->close();
  spdlog::info("requests endpoint stopped");
}

void RequestEndpoint::receive_request() {
  std::vector<zmq::message_t> parts;
  std::size_t part_count = 0;
  zmq::message_t part;
  if (!socket_.recv(part, zmq::recv_flags::dontwait)) return;
  while (true) {
    ++part_count;
    const bool more = part.more();
    if (parts.size() < kPartsKept) parts.push_back(std::move(part));
    if (!more) break;
    part = zmq::message_t();
    (void)socket_.recv(part, zmq::recv_flags::none);
  }
  ++counters_.requests;

  // [identity][body] from a DEALER, [identity][""][body] from a REQ (or REQ-style DEALER).
  std::size_t envelope_size = 1;
  if (parts.size() >= 3 && parts[1].size() == 0) envelope_size = 2;
  std::vector<zmq::message_t> envelope;
  for (std::size_t i = 0; i < envelope_size && i < parts.size(); ++i) {
    envelope.push_back(std::move(parts[i]));
  }
  const std::size_t body_parts = part_count - envelope.size();
  if (body_parts != 1) {
    reject(std::move(envelope), 0,
           invalid(wire_reason::kBadParts,
                   "a request is one message part holding a "
                   "slicestream.v1.Request, got " +
                       std::to_string(body_parts) + " parts"));
    return;
  }
  const zmq::message_t& body = parts[envelope_size];
  DecodedRequest decoded = decode_request(body.data(), body.size(), limits_);
  if (!decoded.command.ok()) {
    reject(std::move(envelope), decoded.request_id, decoded.command.error());
    return;
  }
  Command& command = decoded.command.value();
  Pending pending{std::move(envelope), decoded.request_id, change_name(command),
                  requester_of(body)};
  const std::uint64_t token = next_token_++;
  pending_.emplace(token, std::move(pending));
  spdlog::debug("request {} (token {}) submitted", decoded.request_id, token);
  try {
    pipeline_.submit_command(std::move(command), [queue = replies_, token](CommandReply reply) {
      queue->push({token, std::move(reply)});
    });
  } catch (const std::exception& error) {
    auto it = pending_.find(token);
    if (it == pending_.end()) return;  // the callback already ran
    Pending failed = std::move(it->second);
    pending_.erase(it);
    complete(std::move(failed),
             failure(StatusCode::kInternal, std::string("cannot submit: ") + error.what()));
  }
}

void RequestEndpoint::reject(std::vector<zmq::message_t> envelope, std::uint64_t request_id,
                             const WireError& error) {
  ++counters_.requests_rejected;
  std::uint64_t suppressed = 0;
  if (log_throttle_.allow(&suppressed)) {
    spdlog::warn("request {} refused ({}): {}{}", request_id, error.reason, error.message,
                 suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
  }
  send_reply(envelope, encode_error_reply(request_id, error), nullptr);
}

void RequestEndpoint::deliver_completed() {
  for (CompletedCommand& completed : replies_->take_all()) {
    auto it = pending_.find(completed.token);
    if (it == pending_.end()) {
      spdlog::error("requests endpoint: a reply for unknown token {} (answered twice?)",
                    completed.token);
      continue;
    }
    Pending pending = std::move(it->second);
    pending_.erase(it);
    complete(std::move(pending), std::move(completed.reply));
  }
}

void RequestEndpoint::complete(Pending pending, CommandReply reply) {
  zmq::message_t payload;
  const bool has_payload = take_payload(reply, payload);
  if (!pending.change.empty()) {
    spdlog::info("{} (request {} from {}): {}: {}", pending.change, pending.request_id,
                 pending.requester, to_string(reply.status.code), reply.status.message);
  } else if (!reply.status.ok()) {
    spdlog::debug("request {}: {} {}", pending.request_id,
                  v1::StatusCode_Name(to_wire(reply.status.code)), reply.status.message);
  }
  const v1::Reply wire =
      encode_reply(pending.request_id, reply, steady_now_ns(), counters_.snapshot());
  send_reply(pending.envelope, wire, has_payload ? &payload : nullptr);
}

void RequestEndpoint::send_reply(std::vector<zmq::message_t>& envelope, const v1::Reply& reply,
                                 zmq::message_t* payload) {
  const std::string bytes = reply.SerializeAsString();
  try {
    for (zmq::message_t& frame : envelope) {
      if (!socket_.send(frame, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        ++counters_.replies_undeliverable;  // the requester's queue is full
        return;
      }
    }
    const auto last = payload ? zmq::send_flags::sndmore : zmq::send_flags::none;
    socket_.send(zmq::buffer(bytes), last | zmq::send_flags::dontwait);
    if (payload) socket_.send(*payload, zmq::send_flags::dontwait);
    ++counters_.replies;
  } catch (const zmq::error_t& error) {
    if (error.num() != EHOSTUNREACH) throw;
    ++counters_.replies_undeliverable;  // the requester disconnected before its reply
    spdlog::debug("reply to request {} undeliverable: requester gone", reply.request_id());
  }
}

void RequestEndpoint::answer_pending_unavailable() {
  for (auto& [token, pending] : pending_) {
    const CommandReply reply = failure(StatusCode::kUnavailable, "the server is shutting down");
    send_reply(pending.envelope, encode_reply(pending.request_id, reply, steady_now_ns(), {}),
               nullptr);
  }
  pending_.clear();
}

}  // namespace slicestream
