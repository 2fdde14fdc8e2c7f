#include "server/socket_binding.hpp"

#include <stdexcept>

namespace slicestream {

std::string bind_endpoint(zmq::socket_t& socket, const std::string& address,
                          const char* endpoint_name) {
  const bool known_transport = address.rfind("tcp://", 0) == 0 || address.rfind("ipc://", 0) == 0 ||
                               address.rfind("inproc://", 0) == 0;
  if (!known_transport) {
    throw std::runtime_error(std::string("the ") + endpoint_name + " endpoint address '" + address +
                             "' must start with tcp://, ipc:// or inproc://");
  }
  try {
    socket.bind(address);
  } catch (const zmq::error_t& error) {
    throw std::runtime_error(std::string("cannot bind the ") + endpoint_name + " endpoint to " +
                             address + ": " + error.what());
  }
  return socket.get(zmq::sockopt::last_endpoint);
}

}  // namespace slicestream
