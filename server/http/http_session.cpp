#include "server/http/http_session.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <type_traits>

#include "server/http/proto_json.hpp"
#include "server/http/websocket_session.hpp"
#include "server/metrics/metrics_exposition.hpp"
#include "server/metrics/process_stats.hpp"

namespace slicestream {

namespace {

constexpr std::uint32_t kHeaderLimitBytes = 16u << 10;
constexpr const char* kTextPlain = "text/plain; charset=utf-8";
constexpr const char* kJson = "application/json";
// The Prometheus text exposition format.
constexpr const char* kPrometheusText = "text/plain; version=0.0.4; charset=utf-8";

std::chrono::milliseconds milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(1000 * seconds));
}

std::string path_of(const std::string& target) {
  return target.substr(0, target.find_first_of("?#"));
}

// Browsers send Origin with WebSocket handshakes: only pages served by this server (same host
// and port) may open one, so that another site open in the operator's browser cannot steer the
// scan. Clients without an Origin (scripts, benchmarks) are not browsers and may connect.
bool same_origin(const http::request<http::empty_body>& request) {
  const auto origin = request.find(http::field::origin);
  if (origin == request.end()) return true;
  const auto host = request.find(http::field::host);
  if (host == request.end()) return false;
  const std::string expected = "http://" + std::string(host->value());
  return std::string(origin->value()) == expected;
}

}  // namespace

HttpSession::HttpSession(tcp::socket socket, HttpContext& context)
    : stream_(std::move(socket)), context_(context), deadline_(stream_.get_executor()) {
  ++context_.counters.connections_open;
}

HttpSession::~HttpSession() {
  --context_.counters.connections_open;
}

void HttpSession::start() {
  read_request();
}

void HttpSession::refuse_busy() {
  request_.keep_alive(false);
  send_text(http::status::service_unavailable,
            "too many connections (--http-max-connections); try again later\n", kTextPlain,
            "refused");
}

void HttpSession::close() {
  if (handed_over_) return;
  deadline_.cancel();
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

void HttpSession::read_request() {
  parser_.emplace();
  parser_->header_limit(kHeaderLimitBytes);
  parser_->body_limit(0);
  stream_.expires_after(milliseconds(context_.config.idle_timeout_s));
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&HttpSession::on_read, shared_from_this()));
}

void HttpSession::on_read(beast::error_code error, std::size_t /*bytes*/) {
  if (error == http::error::end_of_stream || error == beast::error::timeout ||
      error == net::error::operation_aborted || error == net::error::connection_reset) {
    close();
    return;
  }
  if (error) {
    request_ = {};
    request_.keep_alive(false);
    const bool too_large = error == http::error::header_limit;
    send_text(too_large ? http::status::request_header_fields_too_large : http::status::bad_request,
              "bad HTTP request: " + error.message() + "\n", kTextPlain, "bad_request");
    return;
  }
  request_ = parser_->release();
  route();
}

void HttpSession::route() {
  const std::string target(request_.target());
  const std::string path = path_of(target);
  const http::verb verb = request_.method();
  if (path == "/ws") {
    upgrade(target);
    return;
  }
  if (verb != http::verb::get && verb != http::verb::head) {
    http::response<http::string_body> response{http::status::method_not_allowed,
                                               request_.version()};
    response.set(http::field::allow, "GET, HEAD");
    response.set(http::field::content_type, kTextPlain);
    response.body() = "only GET and HEAD; commands go over the WebSocket /ws\n";
    send(std::move(response), "method");
    return;
  }
  if (path == "/healthz") {
    send_text(http::status::ok, "ok\n", kTextPlain, "/healthz");
  } else if (path == "/metrics") {
    serve_metrics();
  } else if (path == "/api/status") {
    serve_status();
  } else {
    serve_file(target);
  }
}

std::uint64_t HttpSession::await_answer(const char* route) {
  const std::uint64_t id = ++answer_id_;
  awaiting_ = true;
  stream_.expires_never();
  deadline_.expires_after(milliseconds(context_.config.status_timeout_s));
  deadline_.async_wait([self = shared_from_this(), id, route](beast::error_code error) {
    if (error || !self->take_answer(id)) return;
    self->send_text(http::status::service_unavailable,
                    "the pipeline did not answer within the status timeout\n", kTextPlain, route);
  });
  return id;
}

bool HttpSession::take_answer(std::uint64_t id) {
  if (!awaiting_ || id != answer_id_) return false;
  awaiting_ = false;
  deadline_.cancel();
  return true;
}

void HttpSession::serve_metrics() {
  const std::uint64_t id = await_answer("/metrics");
  auto self = shared_from_this();
  std::shared_ptr<IoMailbox> mailbox = context_.mailbox;
  context_.port.status([self, mailbox, id](CommandReply reply) {
    mailbox->post([self, id, reply = std::move(reply)]() mutable {
      if (!self->take_answer(id)) return;
      MetricsInputs inputs;
      if (reply.status.ok() && reply.report) inputs.status = std::move(reply.report);
      inputs.server_counters = self->context_.port.server_counters();
      inputs.requests = self->context_.port.request_counts();
      inputs.http = snapshot(self->context_.counters);
      inputs.process = read_process_stats();
      self->send_text(http::status::ok, format_metrics(inputs), kPrometheusText, "/metrics");
    });
  });
}

void HttpSession::serve_status() {
  const std::uint64_t id = await_answer("/api/status");
  v1::Request request;
  request.set_protocol_version(1);
  request.mutable_get_status();
  auto self = shared_from_this();
  std::shared_ptr<IoMailbox> mailbox = context_.mailbox;
  context_.port.request("http", request, [self, mailbox, id](WireReply reply) {
    mailbox->post([self, id, reply = std::move(reply)] {
      if (!self->take_answer(id)) return;
      if (reply.reply.code() == v1::STATUS_CODE_OK) {
        self->send_text(http::status::ok, to_json(reply.reply.status()), kJson, "/api/status");
      } else {
        self->send_text(http::status::service_unavailable, to_json(reply.reply), kJson,
                        "/api/status");
      }
    });
  });
}

void HttpSession::serve_file(const std::string& target) {
  const std::optional<std::string> path = context_.files.find(target);
  if (!path) {
    send_text(http::status::not_found,
              context_.files.root().empty()
                  ? "no viewer files: build the slicestream_web target or pass --http-root\n"
                  : "not found\n",
              kTextPlain, "static");
    return;
  }
  http::file_body::value_type body;
  beast::error_code error;
  body.open(path->c_str(), beast::file_mode::scan, error);
  if (error) {
    send_text(http::status::not_found, "cannot open the file\n", kTextPlain, "static");
    return;
  }
  const std::uint64_t size = body.size();
  http::response<http::file_body> response{std::piecewise_construct,
                                           std::make_tuple(std::move(body)),
                                           std::make_tuple(http::status::ok, request_.version())};
  response.set(http::field::content_type, content_type_of(*path));
  response.set(http::field::cache_control, "no-cache");
  response.set("X-Content-Type-Options", "nosniff");
  response.content_length(size);
  if (request_.method() == http::verb::head) {
    http::response<http::empty_body> head{http::status::ok, request_.version()};
    head.set(http::field::content_type, content_type_of(*path));
    head.content_length(size);
    send(std::move(head), "static");
    return;
  }
  send(std::move(response), "static");
}

void HttpSession::upgrade(const std::string& target) {
  if (!websocket::is_upgrade(request_)) {
    send_text(http::status::upgrade_required, "/ws is a WebSocket\n", kTextPlain, "/ws");
    return;
  }
  if (!same_origin(request_)) {
    send_text(http::status::forbidden,
              "a WebSocket from another origin is refused: open the viewer served by this "
              "server\n",
              kTextPlain, "/ws");
    return;
  }
  WebSocketOptions options;
  const std::string problem = parse_websocket_options(target, &options);
  if (!problem.empty()) {
    send_text(http::status::bad_request, problem + "\n", kTextPlain, "/ws");
    return;
  }
  context_.counters.add_response("/ws", 101);
  handed_over_ = true;
  auto session = std::make_shared<WebSocketSession>(std::move(stream_), context_, options);
  context_.connections.add(session);
  session->accept(std::move(request_));
}

void HttpSession::send_text(http::status status, std::string body, const char* content_type,
                            const char* route) {
  http::response<http::string_body> response{status, request_.version() ? request_.version() : 11};
  response.set(http::field::content_type, content_type);
  response.set(http::field::cache_control, "no-store");
  response.body() = request_.method() == http::verb::head ? std::string() : std::move(body);
  send(std::move(response), route);
}

template <class Body>
void HttpSession::send(http::response<Body> response, const char* route) {
  context_.counters.add_response(route, static_cast<unsigned>(response.result_int()));
  response.set(http::field::server, "slicestream");
  response.keep_alive(request_.keep_alive());
  if constexpr (std::is_same_v<Body, http::string_body>) response.prepare_payload();
  const bool keep_alive = response.keep_alive();
  auto shared = std::make_shared<http::response<Body>>(std::move(response));
  response_ = shared;
  stream_.expires_after(milliseconds(context_.config.idle_timeout_s));
  http::async_write(
      stream_, *shared,
      beast::bind_front_handler(&HttpSession::on_write, shared_from_this(), keep_alive));
}

void HttpSession::on_write(bool keep_alive, beast::error_code error, std::size_t /*bytes*/) {
  response_.reset();
  if (error || !keep_alive) {
    close();
    return;
  }
  read_request();
}

}  // namespace slicestream
