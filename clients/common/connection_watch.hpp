// Whether a connecting ZeroMQ socket has a peer. ZeroMQ queues messages for an address nobody
// listens on and reports nothing, so a sender could "send" a whole scan to no one; its socket
// monitor says when a peer completed the handshake, when one refused it (not a matching
// ZeroMQ socket, e.g. the requests endpoint given as the data endpoint) and when it went away.
#pragma once

#include <string>

#include <zmq.hpp>

namespace slicestream::client {

struct ConnectionState {
  int handshakes = 0;         // peers that completed the ZeroMQ handshake
  int failed_handshakes = 0;  // peers that dropped the connection before or in the handshake:
                              // not a matching ZeroMQ socket (or not ZeroMQ at all)
  int disconnects = 0;        // established connections that were lost
  bool connected = false;     // a peer is connected now (handshake done)
};

class ConnectionWatch : private zmq::monitor_t {
 public:
  // Call before socket.connect(), so that no event is missed. `context` is the socket's.
  explicit ConnectionWatch(zmq::socket_t& socket);
  ~ConnectionWatch() override;
  ConnectionWatch(const ConnectionWatch&) = delete;
  ConnectionWatch& operator=(const ConnectionWatch&) = delete;

  // Waits up to `timeout_ms` for a peer's handshake; true once one is connected.
  bool wait_connected(int timeout_ms);
  // The state after every event so far.
  ConnectionState state();

 private:
  void drain();
  void on_event_handshake_succeeded(const zmq_event_t& event, const char* address) override;
  void on_event_handshake_failed_protocol(const zmq_event_t& event, const char* address) override;
  void on_event_handshake_failed_no_detail(const zmq_event_t& event, const char* address) override;
  void on_event_connected(const zmq_event_t& event, const char* address) override;
  void on_event_disconnected(const zmq_event_t& event, const char* address) override;

  ConnectionState state_;
  bool in_handshake_ = false;  // a transport connection awaits its handshake
};

}  // namespace slicestream::client
