// One HTTP connection: reads requests one at a time and answers them (docs/viewer.md, "HTTP
// routes"): /healthz, /metrics, /api/status, the viewer's files, and /ws, which hands the
// connection over to a WebSocketSession. Limits: headers of 16 KiB, no request bodies, an idle
// timeout; /metrics and /api/status wait for the pipeline at most HttpConfig::status_timeout_s.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "server/http/beast.hpp"
#include "server/http/connection_registry.hpp"
#include "server/http/http_context.hpp"

namespace slicestream {

class HttpSession : public Connection, public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, HttpContext& context);
  ~HttpSession() override;

  void start();
  // Answers 503 (too many connections) and closes.
  void refuse_busy();
  void close() override;

 private:
  void read_request();
  void on_read(beast::error_code error, std::size_t bytes);
  void route();
  void serve_metrics();
  void serve_status();
  void serve_file(const std::string& target);
  void upgrade(const std::string& target);
  // Starts waiting for an answer from another thread; returns its id. A deadline answers 503
  // when it does not come in time.
  std::uint64_t await_answer(const char* route);
  bool take_answer(std::uint64_t id);  // true for the first of the answer and the deadline
  void send_text(http::status status, std::string body, const char* content_type,
                 const char* route);
  template <class Body>
  void send(http::response<Body> response, const char* route);
  void on_write(bool keep_alive, beast::error_code error, std::size_t bytes);

  beast::tcp_stream stream_;
  HttpContext& context_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  http::request<http::empty_body> request_;
  std::shared_ptr<void> response_;  // alive until its write completes
  net::steady_timer deadline_;
  std::uint64_t answer_id_ = 0;
  bool awaiting_ = false;
  bool handed_over_ = false;
};

}  // namespace slicestream
