// How the server's ZeroMQ sockets are secured (docs/operations.md, "Authentication"): plain
// (ZeroMQ's NULL mechanism: anyone who reaches a port may use it), or CURVE: every socket is a
// CURVE server with the server's key pair (encryption), and the ZAP handler (ZapAuthenticator)
// admits only clients whose public key is allowed.
//
// One helper for every endpoint, native or not: bind_endpoint (socket_binding.hpp) applies the
// security before it binds and warns when a plain socket listens beyond loopback; an endpoint
// that CURVE cannot cover (HTTP) calls warn_if_exposed itself, naming what covers it instead.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "wire/curve_keys.hpp"

namespace slicestream {

struct ServerSecurity {
  std::optional<CurveKeyPair> curve;         // the server's keys; none: plain sockets
  std::vector<std::string> allowed_clients;  // Z85 public keys admitted by the ZAP handler
  bool encrypted() const { return curve.has_value(); }
};

// Makes `socket` a CURVE server authenticated through ZAP in the domain `endpoint_name`, so that
// the ZAP handler's log lines and counters name the endpoint (nothing for plain security). Call
// before bind.
void secure_server_socket(zmq::socket_t& socket, const ServerSecurity& security,
                          const std::string& endpoint_name);

// False for ipc://, inproc:// and tcp:// on a loopback address (127.0.0.0/8, ::1, localhost, the
// "lo" interface); true for everything else (a wildcard, another interface or host name).
bool reaches_beyond_loopback(const std::string& address);

// Logs a warning when `address` reaches beyond loopback and `encrypted` is false: anyone who
// reaches the port can use the endpoint. `remedy` says what would protect it (for a ZeroMQ
// endpoint: CURVE; for HTTP, which CURVE does not cover: a reverse proxy with TLS and
// authentication, or a firewall). Returns whether it warned.
bool warn_if_exposed(const std::string& address, const std::string& endpoint_name, bool encrypted,
                     const std::string& remedy);

}  // namespace slicestream
