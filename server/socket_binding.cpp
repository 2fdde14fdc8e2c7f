#include "server/socket_binding.hpp"

#include <stdexcept>

#include "cli/endpoint_address.hpp"

namespace slicestream {

std::string bind_endpoint(zmq::socket_t& socket, const std::string& address,
                          const std::string& endpoint_name, const ServerSecurity& security) {
  // Flags are checked when they are parsed; servers built by other code (tests, embedders) are
  // checked here, where inproc:// also makes sense.
  const std::string problem =
      cli::endpoint_problem(address, cli::EndpointRules{cli::EndpointRole::kBind, true});
  if (!problem.empty()) {
    throw std::runtime_error("the " + endpoint_name + " endpoint address " + problem);
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
