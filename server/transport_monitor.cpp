#include "server/transport_monitor.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>

namespace slicestream {
namespace {

constexpr std::chrono::milliseconds kPollInterval{100};
constexpr int kEvents = ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED |
                        ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                        ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

std::string suppressed_note(std::uint64_t suppressed) {
  return suppressed ? " (" + std::to_string(suppressed) + " similar lines suppressed)" : "";
}

}  // namespace

TransportMonitor::TransportMonitor(zmq::context_t& context, ServerCounters& counters)
    : context_(context), counters_(counters) {}

TransportMonitor::~TransportMonitor() {
  stop();
}

void TransportMonitor::watch(zmq::socket_t& socket, const std::string& endpoint_name,
                             DisconnectHandler on_disconnect) {
  const std::string address =
      "inproc://slicestream-monitor-" + std::to_string(watched_.size()) + "-" + endpoint_name;
  if (zmq_socket_monitor(socket.handle(), address.c_str(), kEvents) != 0) {
    throw zmq::error_t();
  }
  auto watched = std::make_unique<Watched>(Watched{endpoint_name,
                                                   zmq::socket_t(context_, zmq::socket_type::pair),
                                                   std::move(on_disconnect), LogThrottle()});
  watched->monitor.set(zmq::sockopt::linger, 0);
  watched->monitor.connect(address);
  watched_.push_back(std::move(watched));
}

void TransportMonitor::start() {
  thread_ = std::thread([this] { run(); });
}

void TransportMonitor::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void TransportMonitor::run() {
  std::vector<zmq::pollitem_t> items;
  for (const auto& watched : watched_)
    items.push_back({watched->monitor.handle(), 0, ZMQ_POLLIN, 0});
  while (!stopping_ && !items.empty()) {
    try {
      zmq::poll(items.data(), items.size(), kPollInterval);
      for (std::size_t i = 0; i < items.size(); ++i) {
        if ((items[i].revents & ZMQ_POLLIN) != 0) read_event(*watched_[i]);
      }
    } catch (const zmq::error_t& error) {
      if (error.num() == ETERM) break;
      spdlog::error("transport monitor: {}", error.what());
    }
  }
}

void TransportMonitor::read_event(Watched& watched) {
  // [event id (2 bytes) + value (4 bytes)][the endpoint's address]
  zmq::message_t event;
  zmq::message_t address_part;
  if (!watched.monitor.recv(event, zmq::recv_flags::dontwait)) return;
  if (!event.more() || !watched.monitor.recv(address_part, zmq::recv_flags::dontwait)) return;
  if (event.size() < 6) return;
  std::uint16_t id = 0;
  std::uint32_t value = 0;
  std::memcpy(&id, event.data(), sizeof id);
  std::memcpy(&value, static_cast<const char*>(event.data()) + 2, sizeof value);
  const std::string address = address_part.to_string();
  const std::string& endpoint = watched.endpoint;
  std::uint64_t suppressed = 0;
  switch (id) {
    case ZMQ_EVENT_ACCEPTED:
      counters_.add(endpoint + "_connections");
      spdlog::debug("{} endpoint: a peer connected to {}", endpoint, address);
      break;
    case ZMQ_EVENT_DISCONNECTED:
      counters_.add(endpoint + "_disconnects");
      spdlog::debug("{} endpoint: a peer disconnected from {}", endpoint, address);
      if (watched.on_disconnect) watched.on_disconnect(address);
      break;
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
      counters_.add(endpoint + "_auth_failed");
      if (watched.log_throttle.allow(&suppressed)) {
        spdlog::warn("{} endpoint ({}): a client failed authentication{}", endpoint, address,
                     suppressed_note(suppressed));
      }
      break;
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:  // e.g. a plain client at a CURVE socket
      counters_.add(endpoint + "_handshakes_failed");
      if (watched.log_throttle.allow(&suppressed)) {
        spdlog::warn(
            "{} endpoint ({}): a peer broke the ZeroMQ handshake (protocol error 0x{:x}), e.g. a "
            "client without CURVE at a CURVE socket{}",
            endpoint, address, value, suppressed_note(suppressed));
      }
      break;
    default:  // ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: value is an errno
      counters_.add(endpoint + "_handshakes_failed");
      if (watched.log_throttle.allow(&suppressed)) {
        spdlog::warn("{} endpoint ({}): a peer's handshake failed: {}{}", endpoint, address,
                     zmq_strerror(static_cast<int>(value)), suppressed_note(suppressed));
      }
      break;
  }
}

}  // namespace slicestream
