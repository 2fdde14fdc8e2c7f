// Binding the server's sockets with errors that name the endpoint and the address.
#pragma once

#include <string>

#include <zmq.hpp>

namespace slicestream {

// Binds `socket` to `address` (tcp://host:port, tcp://host:* for an ephemeral port, ipc://path)
// and returns the address actually bound (the resolved port for "*"). Throws std::runtime_error
// naming `endpoint_name` ("data", "slices", "requests") when the address is malformed or in use.
std::string bind_endpoint(zmq::socket_t& socket, const std::string& address,
                          const char* endpoint_name);

}  // namespace slicestream
