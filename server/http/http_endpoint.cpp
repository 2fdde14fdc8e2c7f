#include "server/http/http_endpoint.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <stdexcept>

#include "kernels/thread_name.hpp"
#include "server/http/http_session.hpp"
#include "server/http/static_files.hpp"

namespace slicestream {

namespace {

// How long stop() lets connections send their close frames.
constexpr std::chrono::seconds kCloseGrace{2};

}  // namespace

tcp::endpoint parse_listen_address(const std::string& listen) {
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    throw std::runtime_error("--http wants host:port (e.g. 127.0.0.1:8080) or off, not '" + listen +
                             "'");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port_text = listen.substr(colon + 1);
  unsigned long port = 0;
  try {
    std::size_t used = 0;
    port = std::stoul(port_text, &used);
    if (used != port_text.size() || port > 65535) throw std::out_of_range("port");
  } catch (const std::exception&) {
    throw std::runtime_error("--http: '" + port_text + "' is not a port number (0-65535)");
  }
  beast::error_code error;
  const net::ip::address address = net::ip::make_address(host, error);
  if (error) throw std::runtime_error("--http: '" + host + "' is not an IP address");
  return {address, static_cast<unsigned short>(port)};
}

HttpEndpoint::HttpEndpoint(const HttpConfig& config, ServerPort& port, HttpCounters& counters,
                           SharedMemoryBudget memory, Executor* encoders)
    : config_(config), counters_(counters), io_(std::make_unique<net::io_context>(1)) {
  mailbox_ = std::make_shared<IoMailbox>(*io_);
  hub_ = std::make_unique<WebSocketHub>(mailbox_, counters_, config_.max_events_queued,
                                        std::move(memory), encoders);
  const std::string root = config_.root.empty() ? default_viewer_root() : config_.root;
  context_ = std::make_unique<HttpContext>(
      HttpContext{config_, port, counters_, StaticFiles(root), *hub_, mailbox_, {}});
  const tcp::endpoint endpoint = parse_listen_address(config_.listen);
  acceptor_.emplace(*io_);
  beast::error_code error;
  acceptor_->open(endpoint.protocol(), error);
  if (!error) acceptor_->set_option(net::socket_base::reuse_address(true), error);
  if (!error) acceptor_->bind(endpoint, error);
  if (!error) acceptor_->listen(net::socket_base::max_listen_connections, error);
  if (error) {
    throw std::runtime_error("cannot bind the http endpoint to " + config_.listen + ": " +
                             error.message());
  }
  const tcp::endpoint bound = acceptor_->local_endpoint();
  const std::string host = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                                   : bound.address().to_string();
  address_ = "http://" + host + ":" + std::to_string(bound.port());
}

HttpEndpoint::~HttpEndpoint() {
  stop();
  acceptor_.reset();
  io_.reset();
}

void HttpEndpoint::start() {
  if (started_ || stopped_) return;
  started_ = true;
  accept();
  thread_ = std::thread([this] {
    name_this_thread("ss-http");
    auto work = net::make_work_guard(*io_);
    io_->run();
  });
  if (context_->files.root().empty()) {
    spdlog::warn(
        "http endpoint: no viewer files found (build the slicestream_web target or "
        "pass --http-root); /metrics, /api/status and /ws work");
  }
  spdlog::info("http endpoint listening on {} (viewer {}, metrics {}/metrics)", address_,
               context_->files.root().empty() ? "not installed" : address_ + "/", address_);
}

void HttpEndpoint::stop() {
  if (stopped_) return;
  stopped_ = true;
  mailbox_->close();
  if (!started_) return;
  net::post(*io_, [this] {
    beast::error_code ignored;
    acceptor_->close(ignored);
    context_->connections.close_all();
  });
  const auto deadline = std::chrono::steady_clock::now() + kCloseGrace;
  while (counters_.connections_open.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  io_->stop();
  thread_.join();
  // Destroying the io_context destroys the sessions its handlers still hold, closing their
  // sockets (a client that did not answer the close frame sees the connection end), while the
  // hub and the context they use are still alive.
  acceptor_.reset();
  io_.reset();
  spdlog::info("http endpoint stopped");
}

void HttpEndpoint::accept() {
  acceptor_->async_accept(*io_, beast::bind_front_handler(&HttpEndpoint::on_accept, this));
}

void HttpEndpoint::on_accept(beast::error_code error, tcp::socket socket) {
  if (error == net::error::operation_aborted) return;  // the acceptor was closed
  if (error) {
    spdlog::warn("http endpoint: accept failed: {}", error.message());
  } else {
    // Replies and images are written back to back: without this, Nagle's algorithm holds the
    // second write until the client's delayed ACK of the first (tens of ms per slice move).
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto session = std::make_shared<HttpSession>(std::move(socket), *context_);
    if (counters_.connections_open.load() > config_.max_connections) {
      ++counters_.connections_refused;
      session->refuse_busy();
    } else {
      ++counters_.connections_accepted;
      context_->connections.add(session);
      session->start();
    }
  }
  accept();
}

}  // namespace slicestream
