// The HTTP + WebSocket endpoint (Boost.Beast on Boost.Asio, one thread): the viewer's files,
// /ws (images out, commands in), /metrics (Prometheus), /api/status (JSON), /healthz.
// docs/viewer.md describes the routes and the WebSocket protocol.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "pipeline/backend/memory_budget.hpp"
#include "pipeline/messages/publish_sink.hpp"
#include "server/http/beast.hpp"
#include "server/http/http_config.hpp"
#include "server/http/http_context.hpp"
#include "server/http/server_port.hpp"
#include "server/http/websocket_hub.hpp"
#include "server/metrics/http_counters.hpp"

namespace slicestream {

class HttpEndpoint {
 public:
  // Binds at once (throws std::runtime_error naming the endpoint and address on failure).
  // `memory`: the server's memory budget, charged with the WebSocket sessions' image copies
  // (null: not charged). `encoders`: helpers of the HTTP thread for encoding images (null: none;
  // must outlive the endpoint).
  HttpEndpoint(const HttpConfig& config, ServerPort& port, HttpCounters& counters,
               SharedMemoryBudget memory = nullptr, Executor* encoders = nullptr);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  const std::string& address() const { return address_; }  // "http://127.0.0.1:8080" as bound
  const std::string& viewer_root() const { return context_->files.root(); }
  // Publications for the WebSocket sessions: add it beside the ZeroMQ publisher.
  PublishSink& publish_sink() { return *hub_; }

  void start();
  // Closes every connection (WebSocket sessions get a "going away" close frame), then ends the
  // thread. Idempotent.
  void stop();

 private:
  void accept();
  void on_accept(beast::error_code error, tcp::socket socket);

  const HttpConfig config_;
  HttpCounters& counters_;
  // Sessions live in io_'s handlers and use the hub and the context: io_ is destroyed first
  // (explicitly, in the destructor).
  std::unique_ptr<net::io_context> io_;
  std::shared_ptr<IoMailbox> mailbox_;
  std::unique_ptr<WebSocketHub> hub_;
  std::unique_ptr<HttpContext> context_;
  std::optional<tcp::acceptor> acceptor_;
  std::string address_;
  std::thread thread_;
  bool started_ = false;
  bool stopped_ = false;
};

// "host:port" -> endpoint (IPv6 hosts in brackets); throws std::runtime_error saying what is wrong.
tcp::endpoint parse_listen_address(const std::string& listen);

}  // namespace slicestream
