// The ZAP handler (ZeroMQ RFC 27) that admits CURVE clients by public key: a REP socket bound at
// inproc://zeromq.zap.01 in the server's context, answered by a thread of its own. libzmq asks it
// about every CURVE handshake of every server socket; it admits a client whose public key is in
// the allowed list (200) and refuses every other (400), counting both per endpoint (the ZAP
// domain, secure_server_socket) as "<endpoint>_clients_admitted" / "<endpoint>_clients_refused"
// and logging them (rate-limited; the peer's address, its key and the routing id it chose,
// escaped). A refused client's handshake fails: it never gets a message through.
#pragma once

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "server/log_throttle.hpp"
#include "server/server_counters.hpp"

namespace slicestream {

class ZapAuthenticator {
 public:
  // Binds the ZAP endpoint at once (before any CURVE socket binds).
  ZapAuthenticator(zmq::context_t& context, const std::vector<std::string>& allowed_public_keys,
                   ServerCounters& counters);
  ~ZapAuthenticator();
  ZapAuthenticator(const ZapAuthenticator&) = delete;
  ZapAuthenticator& operator=(const ZapAuthenticator&) = delete;

  void start();
  void stop();

 private:
  void run();
  void answer_one();

  zmq::socket_t socket_;
  std::set<std::string> allowed_;  // Z85
  ServerCounters& counters_;
  LogThrottle log_throttle_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slicestream
