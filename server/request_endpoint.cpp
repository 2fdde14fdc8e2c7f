#include "server/request_endpoint.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>
#include <utility>

#include "kernels/thread_name.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/codec/request_codec.hpp"
#include "server/socket_binding.hpp"

namespace slicestream {

namespace {
// How often the thread looks at the stop flag while nothing happens (replies wake it at once).
constexpr std::chrono::milliseconds kPollInterval{100};
// Identity, an optional delimiter, the request, and one more to say "too many parts".
constexpr std::size_t kPartsKept = 4;
// The endpoint's name in the request counters.
const std::string kEndpointName = "requests";
// At the stop: the receive queue is read until nothing arrived for this long, and the replies
// get this long to leave before the socket closes.
constexpr std::chrono::milliseconds kQuietAfterStop{50};
constexpr std::chrono::milliseconds kLingerAtStop{1000};
}  // namespace

RequestEndpoint::RequestEndpoint(zmq::context_t& context, const std::string& address,
                                 const ServerSecurity& security, RequestDispatcher& dispatcher,
                                 ServerCounters& counters)
    : socket_(context, zmq::socket_type::router),
      dispatcher_(dispatcher),
      counters_(counters),
      replies_(std::make_shared<ReplyQueue>()),
      backlog_(dispatcher.limits().max_reply_backlog_bytes) {
  socket_.set(zmq::sockopt::linger, 0);
  // Fail loudly (EHOSTUNREACH) instead of silently when the requester has gone: counted.
  socket_.set(zmq::sockopt::router_mandatory, true);
  socket_.set(zmq::sockopt::maxmsgsize,
              static_cast<std::int64_t>(2 * dispatcher.limits().max_request_bytes));
  address_ = bind_endpoint(socket_, address, "requests", security);
}

void RequestEndpoint::watch_transport(TransportMonitor& monitor) {
  monitor.watch(socket_, "requests");
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
  name_this_thread("ss-requests");
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
    answer_queued_requests();
    socket_.set(zmq::sockopt::linger, static_cast<int>(kLingerAtStop.count()));
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
  if (!reserve_backlog(body, pending)) {
    pending_.erase(token);
    return;
  }
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
    send_reply(pending.envelope, dispatcher_.finish(*pending.ticket, std::move(completed.reply)),
               std::move(pending.backlog));
  }
}

bool RequestEndpoint::reserve_backlog(const zmq::message_t& body, Pending& pending) {
  // Only a GetSlice the codec will accept has a result to reserve; the dispatcher refuses the rest.
  const WireLimits& limits = dispatcher_.limits();
  v1::Request request;
  if (body.size() > limits.max_request_bytes ||
      !request.ParseFromArray(body.data(), static_cast<int>(body.size())) ||
      !request.has_get_slice()) {
    return true;
  }
  const std::uint64_t width = request.get_slice().width();
  const std::uint64_t height = request.get_slice().height();
  const auto max_side = static_cast<std::uint64_t>(limits.max_slice_side);
  if (width > max_side || height > max_side) return true;
  const std::size_t bytes = width * height * sizeof(float);
  const std::string requester = pending.envelope.front().to_string();
  pending.backlog = backlog_.reserve(requester, bytes);
  if (pending.backlog) return true;
  send_reply(
      pending.envelope,
      dispatcher_.refuse(
          kEndpointName, request.request_id(), request_kind(request),
          WireError{StatusCode::kResourceExhausted, wire_reason::kReplyBacklog,
                    "this GetSlice's " + std::to_string(bytes >> 20) + " MiB would take the " +
                        std::to_string(backlog_.bytes_of(requester) >> 20) +
                        " MiB of replies still queued for this requester over the " +
                        std::to_string(backlog_.max_bytes() >> 20) +
                        " MiB limit (--max-reply-backlog): read the replies first",
                    0}));
  return false;
}

void RequestEndpoint::send_reply(std::vector<zmq::message_t>& envelope, WireReply reply,
                                 std::shared_ptr<const void> backlog) {
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
    if (reply.values) {
      // The values' memory charge and the requester's backlog last until ZeroMQ lets go.
      auto keep_alive =
          std::make_shared<std::pair<std::shared_ptr<MemoryCharge>, std::shared_ptr<const void>>>(
              std::move(reply.memory), std::move(backlog));
      socket_.send(payload_message(std::move(*reply.values), std::move(keep_alive)),
                   zmq::send_flags::dontwait);
    }
    ++counters_.replies;
  } catch (const zmq::error_t& error) {
    if (error.num() != EHOSTUNREACH) throw;
    ++counters_.replies_undeliverable;  // the requester disconnected before its reply
    spdlog::debug("reply to request {} undeliverable: requester gone", reply.reply.request_id());
  }
}

void RequestEndpoint::answer_queued_requests() {
  std::uint64_t answered = 0;
  while (true) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, kQuietAfterStop);
    if ((item.revents & ZMQ_POLLIN) == 0) break;
    receive_request();
    deliver_completed();
    ++answered;
  }
  answer_pending_unavailable();  // the pipeline answers at once; anything else gets it here
  if (answered > 0) {
    spdlog::info("requests endpoint: {} requests that arrived during the stop answered", answered);
  }
}

void RequestEndpoint::answer_pending_unavailable() {
  for (auto& [token, pending] : pending_) {
    if (pending.ticket) send_reply(pending.envelope, dispatcher_.abandon(*pending.ticket));
  }
  pending_.clear();
}

}  // namespace slicestream
