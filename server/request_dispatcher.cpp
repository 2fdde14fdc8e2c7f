#include "server/request_dispatcher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <memory>
#include <utility>

#include "kernels/steady_clock.hpp"
#include "server/codec/enum_codec.hpp"
#include "server/codec/reply_codec.hpp"
#include "server/codec/request_codec.hpp"

namespace slicestream {

namespace {

CommandReply failure(StatusCode code, std::string message) {
  CommandReply reply;
  reply.status = Status{code, std::move(message)};
  return reply;
}

std::size_t product(int a, int b, int c = 1) {
  return static_cast<std::size_t>(std::max(a, 0)) * static_cast<std::size_t>(std::max(b, 0)) *
         static_cast<std::size_t>(std::max(c, 0));
}

// Checks that a GetSlice answer holds width x height values and a GetVolume answer its planes;
// otherwise the reply becomes an INTERNAL error (the requester must never receive a payload that
// does not match its header).
void check_payload(CommandReply& reply) {
  if (!reply.status.ok()) return;
  std::size_t size = 0, expected = 0;
  std::string what;
  if (reply.slice) {
    const SliceImage& slice = *reply.slice;
    size = slice.values.size();
    expected = product(slice.width, slice.height);
    what = "a " + std::to_string(slice.width) + " x " + std::to_string(slice.height) + " slice";
  } else if (reply.volume) {
    const VolumeChunk& chunk = *reply.volume;
    size = chunk.values.size();
    expected = product(chunk.size_x, chunk.size_y, chunk.plane_count);
    what = std::to_string(chunk.plane_count) + " planes of " + std::to_string(chunk.size_x) +
           " x " + std::to_string(chunk.size_y);
  } else {
    return;
  }
  if (expected > 0 && size == expected) return;
  reply = failure(StatusCode::kInternal,
                  "the pipeline returned " + std::to_string(size) + " values for " + what);
}

// Requests that change what the server reconstructs: logged at info level with their outcome
// (which carries the values in force), so that a log says which settings made an image.
bool changes_reconstruction(const std::string& kind) {
  return kind == "set_slice" || kind == "remove_slice" || kind == "reset_slices" ||
         kind == "set_parameters" || kind == "set_refinement";
}

// The status in the request counters: the wire name, e.g. "invalid_argument".
std::string status_label(StatusCode code) {
  std::string name = v1::StatusCode_Name(to_wire(code));
  const std::string prefix = "STATUS_CODE_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

}  // namespace

RequestDispatcher::RequestDispatcher(const WireLimits& limits, PipelinePort& pipeline,
                                     ServerCounters& counters, RequestCounters& request_counters)
    : limits_(limits),
      pipeline_(pipeline),
      counters_(counters),
      request_counters_(request_counters) {}

RequestDispatcher::Submission RequestDispatcher::submit(const std::string& endpoint,
                                                        const void* data, std::size_t size,
                                                        ReplyCallback on_reply) {
  Decoded<v1::Request> request = parse_request(data, size, limits_);
  if (!request.ok()) return {std::nullopt, refuse(endpoint, 0, "unknown", request.error())};
  return submit(endpoint, request.value(), std::move(on_reply));
}

RequestDispatcher::Submission RequestDispatcher::submit(const std::string& endpoint,
                                                        const v1::Request& request,
                                                        ReplyCallback on_reply) {
  if (std::optional<WireReply> answer = answer_here(endpoint, request)) {
    return {std::nullopt, std::move(*answer)};
  }
  Prepared prepared = prepare(endpoint, request);
  if (!prepared.command) return {std::nullopt, std::move(prepared.refusal)};
  send(std::move(*prepared.command), std::move(on_reply));
  return {std::move(prepared.ticket), {}};
}

void RequestDispatcher::call(const std::string& endpoint, const v1::Request& request,
                             std::function<void(WireReply)> on_reply) {
  if (std::optional<WireReply> answer = answer_here(endpoint, request)) {
    on_reply(std::move(*answer));
    return;
  }
  Prepared prepared = prepare(endpoint, request);
  if (!prepared.command) {
    on_reply(std::move(prepared.refusal));
    return;
  }
  send(std::move(*prepared.command),
       [this, ticket = prepared.ticket, on_reply = std::move(on_reply)](CommandReply reply) {
         on_reply(finish(ticket, std::move(reply)));
       });
}

RequestDispatcher::Prepared RequestDispatcher::prepare(const std::string& endpoint,
                                                       const v1::Request& request) {
  Prepared prepared{{endpoint, request_kind(request), request.request_id()}, std::nullopt, {}};
  RequestTicket& ticket = prepared.ticket;
  Decoded<Command> decoded = decode_request_body(request, limits_);
  if (!decoded.ok()) {
    prepared.refusal = refuse(endpoint, ticket.request_id, ticket.kind, decoded.error());
    return prepared;
  }
  spdlog::debug("{} request {} ({}) submitted", endpoint, ticket.request_id, ticket.kind);
  prepared.command = std::move(decoded.value());
  return prepared;
}

std::optional<WireReply> RequestDispatcher::answer_here(const std::string& endpoint,
                                                        const v1::Request& request) {
  if (capture_ == nullptr || !request.has_set_capture()) return std::nullopt;
  const std::string kind = request_kind(request);
  const Decoded<CaptureRequest> decoded = decode_set_capture(request.set_capture());
  if (!decoded.ok()) return refuse(endpoint, request.request_id(), kind, decoded.error());
  const CaptureReply answer =
      decoded.value().enabled ? capture_->start(decoded.value().label) : capture_->stop();
  request_counters_.add({endpoint, kind, status_label(answer.status.code)});
  WireReply wire;
  v1::Reply& reply = wire.reply;
  reply.set_protocol_version(1);
  reply.set_request_id(request.request_id());
  reply.set_code(to_wire(answer.status.code));
  reply.set_message(answer.status.message);
  reply.set_reason(answer.status.reason);
  *reply.mutable_capture() = answer.capture;
  return wire;
}

void RequestDispatcher::send(Command command, ReplyCallback on_reply) {
  // Exactly once, also when submission throws after the pipeline took the callback.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  ReplyCallback once = [answered, on_reply = std::move(on_reply)](CommandReply reply) {
    if (!answered->exchange(true)) on_reply(std::move(reply));
  };
  try {
    pipeline_.submit_command(std::move(command), once);
  } catch (const std::exception& error) {
    once(failure(StatusCode::kInternal, std::string("cannot submit: ") + error.what()));
  }
}

WireReply RequestDispatcher::refuse(const std::string& endpoint, std::uint64_t request_id,
                                    const std::string& kind, const WireError& error) {
  ++counters_.requests_rejected;
  request_counters_.add({endpoint, kind, status_label(error.code)});
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::uint64_t suppressed = 0;
    if (log_throttle_.allow(&suppressed)) {
      spdlog::warn("{} request {} refused ({}): {}{}", endpoint, request_id, error.reason,
                   error.message,
                   suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
    }
  }
  return {encode_error_reply(request_id, error), std::nullopt, nullptr};
}

WireReply RequestDispatcher::finish(const RequestTicket& ticket, CommandReply reply) {
  check_payload(reply);
  if (changes_reconstruction(ticket.kind)) {
    spdlog::info("{} (request {} on the {} endpoint): {}: {}", ticket.kind, ticket.request_id,
                 ticket.endpoint, status_label(reply.status.code), reply.status.message);
  } else if (!reply.status.ok()) {
    spdlog::debug("{} request {}: {} {}", ticket.endpoint, ticket.request_id,
                  v1::StatusCode_Name(to_wire(reply.status.code)), reply.status.message);
  }
  request_counters_.add({ticket.endpoint, ticket.kind, status_label(reply.status.code)});
  WireReply wire{encode_reply(ticket.request_id, reply, steady_now_ns(), counters_.snapshot()),
                 std::nullopt, nullptr};
  if (capture_ != nullptr && wire.reply.has_status()) {
    *wire.reply.mutable_status()->mutable_capture() = capture_->status();
  }
  if (reply.status.ok() && reply.slice) {
    wire.values = std::move(reply.slice->values).take_vector();
    wire.memory = std::move(reply.slice->memory);
  }
  if (reply.status.ok() && reply.volume) {
    wire.values = std::move(reply.volume->values);
    wire.memory = std::move(reply.volume->memory);
  }
  return wire;
}

WireReply RequestDispatcher::abandon(const RequestTicket& ticket) {
  return finish(ticket, failure(StatusCode::kUnavailable, "the server is shutting down"));
}

}  // namespace slicestream
