#include "server/http/websocket_session.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "server/codec/wire_error.hpp"
#include "server/http/proto_json.hpp"
#include "server/http/websocket_hub.hpp"
#include "wire/wire_text.hpp"

namespace slicestream {

namespace {

const std::string kEndpointName = "websocket";
// Replies (and refusals) waiting to be sent; a client that keeps sending without reading them
// is disconnected.
constexpr std::size_t kMaxRepliesQueued = 256;
// How much of a refused WebSocket option its error message repeats.
constexpr std::size_t kOptionTextBytes = 60;
// An image the memory budget had no room to encode is tried again after this long.
constexpr auto kOverBudgetRetry = std::chrono::milliseconds(20);

bool parse_rate(std::string_view text, double* rate) {
  try {
    std::size_t used = 0;
    const double value = std::stod(std::string(text), &used);
    if (used != text.size() || !std::isfinite(value) || value <= 0) return false;
    *rate = value;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::string parse_websocket_options(std::string_view target, WebSocketOptions* options) {
  const std::size_t question = target.find('?');
  if (question == std::string_view::npos) return {};
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    const std::size_t equals = item.find('=');
    const std::string_view key = item.substr(0, equals);
    const std::string_view value =
        equals == std::string_view::npos ? std::string_view() : item.substr(equals + 1);
    if (key == "encoding" && (value == "f16" || value == "f32")) {
      options->encoding = value == "f16" ? ImageEncoding::kHalf : ImageEncoding::kFloat32;
    } else if (key == "preview" && (value == "0" || value == "1")) {
      options->preview = value == "1";
    } else if (key == "rate" && parse_rate(value, &options->rate_hz)) {
    } else {
      return "bad WebSocket option '" + escape_wire_text(item, kOptionTextBytes) +
             "': use encoding=f16|f32, preview=0|1, rate=<updates per second>";
    }
  }
  return {};
}

WebSocketSession::WebSocketSession(beast::tcp_stream stream, HttpContext& context,
                                   WebSocketOptions options)
    : ws_(std::move(stream)),
      context_(context),
      options_(options),
      rate_timer_(ws_.get_executor()) {
  ++context_.counters.connections_open;
  double rate = context_.config.max_update_rate_hz;
  if (options_.rate_hz > 0 && (rate <= 0 || options_.rate_hz < rate)) rate = options_.rate_hz;
  if (rate > 0) min_interval_ = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / rate));
  request_tokens_ = 2 * context_.config.max_requests_per_s;
  tokens_updated_ = Clock::now();
}

WebSocketSession::~WebSocketSession() {
  --context_.counters.connections_open;
  if (open_) {
    --context_.counters.websocket_sessions;
    context_.hub.remove(this);
  }
}

void WebSocketSession::accept(http::request<http::empty_body> request) {
  beast::get_lowest_layer(ws_).expires_never();  // the WebSocket's own timeouts take over
  auto timeout = websocket::stream_base::timeout::suggested(beast::role_type::server);
  timeout.idle_timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(1000 * context_.config.idle_timeout_s));
  timeout.keep_alive_pings = true;
  ws_.set_option(timeout);
  ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& response) {
    response.set(http::field::server, "slicestream");
  }));
  ws_.read_message_max(context_.config.max_message_bytes);
  ws_.async_accept(request,
                   beast::bind_front_handler(&WebSocketSession::on_accept, shared_from_this()));
}

void WebSocketSession::on_accept(beast::error_code error) {
  if (error) {
    spdlog::debug("websocket handshake failed: {}", error.message());
    return;
  }
  open_ = true;
  const HttpConfig& c = context_.config;
  queue_reply({std::make_shared<const std::string>(fmt::format(
                   R"({{"type":"hello","server":"slicestream","protocol_version":1,)"
                   R"("encoding":"{}","preview":{},"max_update_rate_hz":{},)"
                   R"("limits":{{"max_message_bytes":{},"max_requests_per_s":{},)"
                   R"("max_requests_in_flight":{}}}}})",
                   to_string(options_.encoding), options_.preview ? "true" : "false",
                   min_interval_.count() > 0 ? 1e9 / static_cast<double>(min_interval_.count()) : 0,
                   c.max_message_bytes, c.max_requests_per_s, c.max_requests_in_flight)),
               false, nullptr});
  context_.hub.add(shared_from_this());
  // Counted once the hub offers it every publication: a client (or test) that sees the count
  // and then publishes gets that publication.
  ++context_.counters.websocket_sessions;
  read();
}

void WebSocketSession::read() {
  ws_.async_read(read_buffer_,
                 beast::bind_front_handler(&WebSocketSession::on_read, shared_from_this()));
}

void WebSocketSession::on_read(beast::error_code error, std::size_t /*bytes*/) {
  if (error) {
    if (error == websocket::error::message_too_big) {
      ++context_.counters.websocket_messages_refused;
      spdlog::warn("websocket client sent a message over {} bytes: connection closed",
                   context_.config.max_message_bytes);
    }
    end(error == websocket::error::closed ? "closed by the client" : "read failed");
    return;
  }
  if (ws_.got_text()) {
    handle_request(beast::buffers_to_string(read_buffer_.data()));
  } else {
    refuse(0, "unknown", StatusCode::kInvalidArgument, wire_reason::kUndecodableRequest,
           "binary messages are not requests: send a slicestream.v1.Request as JSON text");
  }
  read_buffer_.consume(read_buffer_.size());
  read();
}

bool WebSocketSession::take_request_token() {
  const double rate = context_.config.max_requests_per_s;
  if (rate <= 0) return true;
  const Clock::time_point now = Clock::now();
  const double elapsed_s = std::chrono::duration<double>(now - tokens_updated_).count();
  tokens_updated_ = now;
  request_tokens_ = std::min(2 * rate, request_tokens_ + elapsed_s * rate);
  if (request_tokens_ < 1) return false;
  request_tokens_ -= 1;
  return true;
}

void WebSocketSession::handle_request(const std::string& text) {
  const HttpConfig& c = context_.config;
  if (!take_request_token()) {
    refuse(
        0, "unknown", StatusCode::kResourceExhausted, "rate_limited",
        fmt::format("more than {} requests per second on this connection", c.max_requests_per_s));
    return;
  }
  if (in_flight_ >= c.max_requests_in_flight) {
    refuse(0, "unknown", StatusCode::kResourceExhausted, "too_many_in_flight",
           fmt::format("{} requests of this connection are still waiting for their replies",
                       in_flight_));
    return;
  }
  v1::Request request;
  const std::string problem = from_json(text, &request);
  if (!problem.empty()) {
    refuse(0, "unknown", StatusCode::kInvalidArgument, wire_reason::kUndecodableRequest,
           "not a slicestream.v1.Request in JSON: " + escape_wire_text(problem));
    return;
  }
  ++in_flight_;
  auto self = shared_from_this();
  std::shared_ptr<IoMailbox> mailbox = context_.mailbox;
  context_.port.request(kEndpointName, request, [self, mailbox](WireReply reply) {
    mailbox->post([self, reply = std::move(reply)]() mutable {
      --self->in_flight_;
      self->send_reply(std::move(reply));
    });
  });
}

void WebSocketSession::refuse(std::uint64_t request_id, const std::string& kind, StatusCode code,
                              const char* reason, const std::string& message) {
  ++context_.counters.websocket_messages_refused;
  send_reply(
      context_.port.refuse(kEndpointName, request_id, kind, WireError{code, reason, message, 0}));
}

void WebSocketSession::send_reply(WireReply reply) {
  if (reply.values) {
    // The encoded copy takes the values' place in the budget (it is no larger than they are).
    queue_reply({std::make_shared<const std::string>(encode_image_message(
                     "reply", "\"reply\":" + to_json(reply.reply), reply.values->data(),
                     reply.values->size(), options_.encoding)),
                 true, std::move(reply.memory)});
  } else {
    queue_reply({std::make_shared<const std::string>(reply_message(reply.reply)), false, nullptr});
  }
}

void WebSocketSession::queue_reply(Outgoing message) {
  if (ended_) return;
  if (replies_.size() >= kMaxRepliesQueued) {
    end("the client sends requests without reading the replies",
        websocket::close_reason(websocket::close_code::policy_error,
                                "too many replies waiting: read them"));
    return;
  }
  replies_.push_back(std::move(message));
  write_next();
}

void WebSocketSession::offer(const std::shared_ptr<ImageUpdate>& update) {
  if (!open_ || ended_) return;
  if (!options_.preview && update->type() == "preview") return;
  Stream& stream = streams_[{update->type(), update->slice_id()}];
  if (stream.waiting) ++context_.counters.websocket_updates_superseded;
  stream.waiting = update;
  stream.offered = ++offers_;
  write_next();
}

void WebSocketSession::offer_event(const std::shared_ptr<const std::string>& message) {
  if (!open_ || ended_) return;
  if (events_.size() >= context_.config.max_events_queued) {
    events_.pop_front();
    ++events_dropped_;
    ++context_.counters.websocket_events_dropped;
  }
  events_.push_back({message, false, nullptr});
  write_next();
}

bool WebSocketSession::next_image(Outgoing* out) {
  const Clock::time_point now = Clock::now();
  Stream* best = nullptr;
  std::optional<Clock::time_point> earliest;
  for (auto& [key, stream] : streams_) {
    if (!stream.waiting) continue;
    // A slice at a new place (moved by someone) goes out at once: the rate limits the steady
    // updates, not the answer to a move.
    const bool moved = stream.waiting->place() != stream.sent_place;
    const Clock::time_point allowed =
        std::max(stream.budget_retry, moved ? Clock::time_point{} : stream.next_allowed);
    if (allowed <= now) {
      if (!best || stream.offered < best->offered) best = &stream;
    } else if (!earliest || allowed < *earliest) {
      earliest = allowed;
    }
  }
  std::shared_ptr<const std::string> encoded;
  if (best) encoded = best->waiting->encoded(options_.encoding);
  if (best && !encoded) {
    // No room in the memory budget for its message now: it waits (counted), others go first.
    ++context_.counters.websocket_updates_over_budget;
    best->budget_retry = now + kOverBudgetRetry;
    if (!earliest || best->budget_retry < *earliest) earliest = best->budget_retry;
    best = nullptr;
  }
  if (best) {
    *out = {std::move(encoded), true, nullptr};
    best->sent_place = best->waiting->place();
    best->waiting.reset();
    best->next_allowed = now + min_interval_;
    return true;
  }
  if (earliest && !timer_armed_) {
    timer_armed_ = true;
    rate_timer_.expires_at(*earliest);
    rate_timer_.async_wait([self = shared_from_this()](beast::error_code error) {
      self->timer_armed_ = false;
      if (!error) self->write_next();
    });
  }
  return false;
}

void WebSocketSession::write_next() {
  if (writing_ || !open_ || ended_) return;
  Outgoing next;
  if (!replies_.empty()) {
    next = std::move(replies_.front());
    replies_.pop_front();
  } else if (events_dropped_ > 0) {
    next = {std::make_shared<const std::string>(notice_message(fmt::format(
                "{} events were dropped because this connection could not take them in time",
                events_dropped_))),
            false, nullptr};
    events_dropped_ = 0;
  } else if (!events_.empty()) {
    next = std::move(events_.front());
    events_.pop_front();
  } else if (!next_image(&next)) {
    return;
  }
  writing_ = true;
  ++context_.counters.websocket_frames_sent;
  context_.counters.websocket_bytes_sent += next.data->size();
  ws_.binary(next.binary);
  // The message stays alive in the handler until the write completes.
  ws_.async_write(
      net::buffer(*next.data),
      [self = shared_from_this(), data = next.data, memory = next.memory](
          beast::error_code error, std::size_t bytes) { self->on_write(error, bytes); });
}

void WebSocketSession::on_write(beast::error_code error, std::size_t /*bytes*/) {
  writing_ = false;
  if (error) {
    end("write failed");
    return;
  }
  write_next();
}

void WebSocketSession::close() {
  if (ended_) return;
  if (!open_) {
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
    return;
  }
  end("the server is stopping",
      websocket::close_reason(websocket::close_code::going_away, "the server is stopping"));
}

void WebSocketSession::end(const char* why, std::optional<websocket::close_reason> close) {
  if (ended_) return;
  ended_ = true;
  spdlog::debug("websocket session ended: {}", why);
  rate_timer_.cancel();
  replies_.clear();
  events_.clear();
  streams_.clear();
  if (open_) {
    open_ = false;
    --context_.counters.websocket_sessions;
    context_.hub.remove(this);
  }
  if (close) ws_.async_close(*close, [self = shared_from_this()](beast::error_code) {});
}

}  // namespace slicestream
