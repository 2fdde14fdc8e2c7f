// Watches the server's ZeroMQ sockets through libzmq's socket monitors, so that what the transport
// does on its own is counted and reported instead of passing in silence: connections accepted and
// closed, handshakes that failed (e.g. a plain client at a CURVE socket) and authentications
// refused. One thread reads the monitor sockets of every watched socket.
//
// Counted per endpoint as "<endpoint>_connections", "<endpoint>_disconnects",
// "<endpoint>_handshakes_failed" and "<endpoint>_auth_failed" (ServerCounters), and logged
// (rate-limited). A watched socket may ask to be told about disconnects (`on_disconnect`): the
// data endpoint reports each one as a warning event, because ZeroMQ also closes a connection that
// sends a message part over the socket's transport cap, and whatever that sender still had
// queued is lost (ZeroMQ gives no other sign of it).
//
// Every endpoint, native or not, calls watch() for its socket before its own thread starts.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "server/log_throttle.hpp"
#include "server/server_counters.hpp"

namespace slicestream {

class TransportMonitor {
 public:
  // Called on the monitor thread with the endpoint's address.
  using DisconnectHandler = std::function<void(const std::string& address)>;

  TransportMonitor(zmq::context_t& context, ServerCounters& counters);
  ~TransportMonitor();
  TransportMonitor(const TransportMonitor&) = delete;
  TransportMonitor& operator=(const TransportMonitor&) = delete;

  // Call from the socket's owning thread before it is used elsewhere, and before start().
  void watch(zmq::socket_t& socket, const std::string& endpoint_name,
             DisconnectHandler on_disconnect = nullptr);
  void start();
  void stop();

 private:
  struct Watched {
    std::string endpoint;
    zmq::socket_t monitor;  // PAIR connected to the socket's monitor endpoint
    DisconnectHandler on_disconnect;
    LogThrottle log_throttle;
  };

  void run();
  void read_event(Watched& watched);

  zmq::context_t& context_;
  ServerCounters& counters_;
  std::vector<std::unique_ptr<Watched>> watched_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slicestream
