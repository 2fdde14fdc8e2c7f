#include "server/request_endpoint.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>

#include "server/codec/publish_codec.hpp"
#include "server/socket_binding.hpp"

namespace slicestream {

namespace {
// How often the thread looks at the stop flag while nothing happens (replies wake it at once).
constexpr std::chrono::milliseconds kPollInterval{100};
// Identity, an optional delimiter, the request, and one more to say "too many parts".
constexpr std::size_t kPartsKept = 4;
// The endpoint's name in the request counters.
const std::string kEndpointName = "requests";
}  // namespace

RequestEndpoint::RequestEndpoint(zmq::context_t& context, const std::string& address,
                                 RequestDispatcher& dispatcher, ServerCounters& counters)
    : socket_(context, zmq::socket_type::router),
      dispatcher_(dispatcher),
      counters_(counters),
      replies_(std::make_shared<ReplyQueue>()) {
  socket_.set(zmq::sockopt::linger, 0);
  // Fail loudly (EHOSTUNREACH) instead of silently when the requester has gone: counted.
  socket_.set(zmq::sockopt::router_mandatory, true);
  socket_.set(zmq::sockopt::maxmsgsize,
              static_cast<std::int64_t>(2 * dispatcher.limits().max_request_bytes));
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
    send_reply(envelope, dispatcher_.refuse(kEndpointName, 0, "unknown",
                                            invalid(wire_reason::kBadParts,
                                                    "a request is one message part holding a "
                                                    "slicestream.v1.Request, got " +
                                                        std::to_string(body_parts) + " parts")));
    return;
  }
  const std::uint64_t token = next_token_++;
  Pending& pending = pending_[token];
  pending.envelope = std::move(envelope);
  const zmq::message_t& body = parts[envelope_size];
  RequestDispatcher::Submission submission = dispatcher_.submit(
      kEndpointName, body.data(), body.size(), [queue = replies_, token](CommandReply reply) {
        queue->push({token, std::move(reply)});
      });
  if (!submission.ticket) {
    send_reply(pending.envelope, std::move(submission.refusal));
    pending_.erase(token);
    return;
  }
  pending.ticket = std::move(submission.ticket);
}

void RequestEndpoint::deliver_completed() {
  for (CompletedCommand& completed : replies_->take_all()) {
    auto it = pending_.find(completed.token);
    if (it == pending_.end() || !it->second.ticket) {
      spdlog::error("requests endpoint: a reply for unknown token {} (answered twice?)",
                    completed.token);
      continue;
    }
    Pending pending = std::move(it->second);
    pending_.erase(it);
    send_reply(pending.envelope, dispatcher_.finish(*pending.ticket, std::move(completed.reply)));
  }
}

void RequestEndpoint::send_reply(std::vector<zmq::message_t>& envelope, WireReply reply) {
  const std::string bytes = reply.reply.SerializeAsString();
  try {
    for (zmq::message_t& frame : envelope) {
      if (!socket_.send(frame, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        ++counters_.replies_undeliverable;  // the requester's queue is full
        return;
      }
    }
    const auto last = reply.values ? zmq::send_flags::sndmore : zmq::send_flags::none;
    socket_.send(zmq::buffer(bytes), last | zmq::send_flags::dontwait);
    if (reply.values)
      socket_.send(payload_message(std::move(*reply.values)), zmq::send_flags::dontwait);
    ++counters_.replies;
  } catch (const zmq::error_t& error) {
    if (error.num() != EHOSTUNREACH) throw;
    ++counters_.replies_undeliverable;  // the requester disconnected before its reply
    spdlog::debug("reply to request {} undeliverable: requester gone", reply.reply.request_id());
  }
}

void RequestEndpoint::answer_pending_unavailable() {
  for (auto& [token, pending] : pending_) {
    if (pending.ticket) send_reply(pending.envelope, dispatcher_.abandon(*pending.ticket));
  }
  pending_.clear();
}

}  // namespace slicestream
