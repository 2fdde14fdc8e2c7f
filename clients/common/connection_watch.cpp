#include "clients/common/connection_watch.hpp"

#include <atomic>
#include <chrono>

namespace slicestream::client {

namespace {

std::string monitor_address() {
  static std::atomic<unsigned> counter{0};
  return "inproc://slicestream-connection-watch-" + std::to_string(counter++);
}

constexpr int kEvents = ZMQ_EVENT_CONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                        ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                        ZMQ_EVENT_DISCONNECTED;

}  // namespace

ConnectionWatch::ConnectionWatch(zmq::socket_t& socket) {
  init(socket, monitor_address(), kEvents);
}

ConnectionWatch::~ConnectionWatch() = default;

void ConnectionWatch::drain() {
  while (check_event(0)) {
  }
}

bool ConnectionWatch::wait_connected(int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  drain();
  while (!state_.connected) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    check_event(static_cast<int>(left));
  }
  return state_.connected;
}

ConnectionState ConnectionWatch::state() {
  drain();
  return state_;
}

void ConnectionWatch::on_event_connected(const zmq_event_t&, const char*) {
  in_handshake_ = true;
}

void ConnectionWatch::on_event_handshake_succeeded(const zmq_event_t&, const char*) {
  in_handshake_ = false;
  ++state_.handshakes;
  state_.connected = true;
}

void ConnectionWatch::on_event_handshake_failed_protocol(const zmq_event_t&, const char*) {
  in_handshake_ = false;
  ++state_.failed_handshakes;
}

void ConnectionWatch::on_event_handshake_failed_no_detail(const zmq_event_t&, const char*) {
  in_handshake_ = false;
  ++state_.failed_handshakes;
}

void ConnectionWatch::on_event_disconnected(const zmq_event_t&, const char*) {
  // A peer of the wrong socket type closes the connection before the handshake completes, without
  // a handshake event.
  if (in_handshake_) {
    in_handshake_ = false;
    ++state_.failed_handshakes;
    return;
  }
  if (!state_.connected) return;  // after a failed handshake, already counted
  ++state_.disconnects;
  state_.connected = false;
}

}  // namespace slicestream::client
