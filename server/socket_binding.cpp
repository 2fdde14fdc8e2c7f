#include "server/socket_binding.hpp"

#include <stdexcept>

#include "cli/endpoint_address.hpp"

namespace slicestream {

std::string bind_endpoint(zmq::socket_t& socket, const std::string& address,
                          const char* endpoint_name) {
  // Flags are checked when they are parsed; servers built by other code (tests, embedders) are
  // checked here, where inproc:// also makes sense.
  const std::string problem =
      cli::endpoint_problem(address, cli::EndpointRules{cli::EndpointRole::kBind, true});
  if (!problem.empty()) {
    throw std::runtime_error(std::string("the ") + endpoint_name + " endpoint address " + problem);
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
