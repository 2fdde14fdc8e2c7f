#include "server/socket_binding.hpp"

#include <stdexcept>

namespace slicestream {

std::string bind_endpoint(zmq::socket_t& socket, const std::string& address,
                          const std::string& endpoint_name, const ServerSecurity& security) {
  const bool known_transport = address.rfind("tcp://", 0) == 0 || address.rfind("ipc://", 0) == 0 ||
                               address.rfind("inproc://", 0) == 0;
  if (!known_transport) {
    throw std::runtime_error("the " + endpoint_name + " endpoint address '" + address +
                             "' must start with tcp://, ipc:// or inproc://");
  }
  secure_server_socket(socket, security, endpoint_name);
  try {
    socket.bind(address);
  } catch (const zmq::error_t& error) {
    throw std::runtime_error("cannot bind the " + endpoint_name + " endpoint to " + address + ": " +
                             error.what());
  }
  warn_if_exposed(address, endpoint_name, security.encrypted(),
                  "Use CURVE (--curve-secret-key, --curve-clients) or bind to 127.0.0.1.");
  return socket.get(zmq::sockopt::last_endpoint);
}

}  // namespace slicestream
