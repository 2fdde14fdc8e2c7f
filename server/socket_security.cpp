#include "server/socket_security.hpp"

#include <spdlog/spdlog.h>

namespace slicestream {
namespace {

// The host part of tcp://host:port (brackets of an IPv6 address removed); empty for other
// transports.
std::string tcp_host(const std::string& address) {
  const std::string scheme = "tcp://";
  if (address.rfind(scheme, 0) != 0) return {};
  std::string rest = address.substr(scheme.size());
  // tcp://source;destination names a source address for connects only; binds use the last part.
  const std::size_t semicolon = rest.find(';');
  if (semicolon != std::string::npos) rest = rest.substr(semicolon + 1);
  if (!rest.empty() && rest[0] == '[') {
    const std::size_t close = rest.find(']');
    return close == std::string::npos ? rest : rest.substr(1, close - 1);
  }
  const std::size_t colon = rest.rfind(':');
  return colon == std::string::npos ? rest : rest.substr(0, colon);
}

}  // namespace

void secure_server_socket(zmq::socket_t& socket, const ServerSecurity& security,
                          const std::string& endpoint_name) {
  if (!security.curve) return;
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, security.curve->secret_key);
  socket.set(zmq::sockopt::curve_publickey, security.curve->public_key);
  socket.set(zmq::sockopt::zap_domain, endpoint_name);
}

bool reaches_beyond_loopback(const std::string& address) {
  if (address.rfind("tcp://", 0) != 0) return false;  // ipc://, inproc://: this machine only
  const std::string host = tcp_host(address);
  return !(host.rfind("127.", 0) == 0 || host == "::1" || host == "localhost" || host == "lo");
}

bool warn_if_exposed(const std::string& address, const std::string& endpoint_name, bool encrypted,
                     const std::string& remedy) {
  if (encrypted || !reaches_beyond_loopback(address)) return false;
  spdlog::warn(
      "the {} endpoint listens on {} beyond loopback without authentication or encryption: anyone "
      "who reaches the port can use it. {} (docs/operations.md)",
      endpoint_name, address, remedy);
  return true;
}

}  // namespace slicestream
