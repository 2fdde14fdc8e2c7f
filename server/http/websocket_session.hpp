// One browser (or other WebSocket client) on /ws: images and events out, commands in.
//
// Out: replies first, then events, then images. Of the images only the latest per slice (and
// one preview) waits; each stream is sent at most `rate` times per second; a newer image replaces
// the waiting one (counted as superseded). Events wait in a bounded queue; what overflows is
// counted and announced in a notice.
// In: JSON text messages, each a slicestream.v1.Request in protobuf's JSON mapping, answered by
// one reply through the server's request path (ServerPort); limits on message size, rate and
// requests in flight, each refusal answered with its reason. docs/viewer.md has the protocol.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "server/http/beast.hpp"
#include "server/http/connection_registry.hpp"
#include "server/http/http_context.hpp"
#include "server/http/websocket_frames.hpp"

namespace slicestream {

// What a client asks for in the query string of its URL: /ws?encoding=f16&preview=0&rate=10.
struct WebSocketOptions {
  ImageEncoding encoding = ImageEncoding::kHalf;
  bool preview = true;
  double rate_hz = 0;  // 0: the server's limit
};
// Unknown keys and bad values are refused with a message (the upgrade then fails with 400).
std::string parse_websocket_options(std::string_view target, WebSocketOptions* options);

class WebSocketSession : public Connection, public std::enable_shared_from_this<WebSocketSession> {
 public:
  WebSocketSession(beast::tcp_stream stream, HttpContext& context, WebSocketOptions options);
  ~WebSocketSession() override;

  void accept(http::request<http::empty_body> request);
  void close() override;

  // From the hub (HTTP thread).
  void offer(const std::shared_ptr<ImageUpdate>& update);
  void offer_event(const std::shared_ptr<const std::string>& message);

 private:
  using Clock = std::chrono::steady_clock;
  struct Outgoing {
    std::shared_ptr<const std::string> data;
    bool binary = false;
    // A GetSlice's charge in the memory budget: it covers the encoded copy until it is sent.
    std::shared_ptr<const void> memory;
  };
  struct Stream {
    std::shared_ptr<ImageUpdate> waiting;
    std::uint64_t offered = 0;  // order of offers, for fairness between streams
    Clock::time_point next_allowed{};
    Clock::time_point budget_retry{};   // the memory budget had no room to encode it before this
    std::array<float, 9> sent_place{};  // where the last image sent was
  };

  void on_accept(beast::error_code error);
  void read();
  void on_read(beast::error_code error, std::size_t bytes);
  void handle_request(const std::string& text);
  void refuse(std::uint64_t request_id, const std::string& kind, StatusCode code,
              const char* reason, const std::string& message);
  void send_reply(WireReply reply);
  void queue_reply(Outgoing message);
  bool take_request_token();
  void write_next();
  bool next_image(Outgoing* out);
  void on_write(beast::error_code error, std::size_t bytes);
  // Stops the session's traffic; `close`: with this close frame (else the stream has failed or
  // the client closed it).
  void end(const char* why, std::optional<websocket::close_reason> close = std::nullopt);

  websocket::stream<beast::tcp_stream> ws_;
  HttpContext& context_;
  WebSocketOptions options_;
  std::chrono::nanoseconds min_interval_{};
  beast::flat_buffer read_buffer_;
  std::deque<Outgoing> replies_;
  std::deque<Outgoing> events_;
  std::uint64_t events_dropped_ = 0;
  std::map<std::pair<std::string, std::uint32_t>, Stream> streams_;
  std::uint64_t offers_ = 0;
  net::steady_timer rate_timer_;
  bool timer_armed_ = false;
  bool writing_ = false;
  bool open_ = false;
  bool ended_ = false;
  int in_flight_ = 0;
  double request_tokens_ = 0;
  Clock::time_point tokens_updated_{};
};

}  // namespace slicestream
