// Binding the server's sockets: the endpoint's security first (socket_security.hpp), errors that
// name the endpoint and the address, and a warning for a plain socket beyond loopback. Every
// ZeroMQ endpoint of the server binds through here.
#pragma once

#include <string>

#include <zmq.hpp>

#include "server/socket_security.hpp"

namespace slicestream {

// Secures `socket` as `security` says, binds it to `address` (tcp://host:port, tcp://host:* for
// an ephemeral port, ipc://path) and returns the address actually bound (the resolved port for
// "*"). Throws std::runtime_error naming `endpoint_name` ("data", "slices", "requests") when the
// address is malformed or in use. Warns when the socket is plain and reaches beyond loopback.
std::string bind_endpoint(zmq::socket_t& socket, const std::string& address,
                          const std::string& endpoint_name, const ServerSecurity& security);

}  // namespace slicestream
