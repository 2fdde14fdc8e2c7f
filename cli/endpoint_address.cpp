#include "cli/endpoint_address.hpp"

#include <sys/un.h>

#include <algorithm>
#include <cctype>

namespace slicestream::cli {

namespace {

constexpr int kMaxPort = 65535;
// The longest ipc path a Unix socket address holds (its terminating NUL excluded).
constexpr std::size_t kMaxIpcPath = sizeof(sockaddr_un::sun_path) - 1;

const char* const kForm = "tcp://HOST:PORT or ipc://PATH";

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(),
                                      [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool host_character(unsigned char c) {
  return std::isalnum(c) != 0 || c == '.' || c == '-' || c == '_';
}

bool ipv6_character(unsigned char c) {
  return std::isxdigit(c) != 0 || c == ':' || c == '.' || c == '%' || std::isalnum(c) != 0;
}

// "5570" -> 5570; "*" -> 0 where a bound address may use it.
std::optional<int> parse_port(const std::string& text, EndpointRole role, std::string* problem) {
  if (text == "*") {
    if (role == EndpointRole::kBind) return 0;
    *problem = "a client needs the server's port number, not '*'";
    return std::nullopt;
  }
  if (!all_digits(text)) {
    *problem = "the port '" + text + "' is not a number" +
               std::string(role == EndpointRole::kBind ? " (or * for any free port)" : "");
    return std::nullopt;
  }
  // Long digit strings would overflow: anything beyond five digits is out of range anyway.
  const int port = text.size() > 5 ? kMaxPort + 1 : std::stoi(text);
  if (port < 1 || port > kMaxPort) {
    *problem = "the port " + text + " is outside 1..65535" +
               std::string(role == EndpointRole::kBind ? " (* binds any free port)" : "");
    return std::nullopt;
  }
  return port;
}

bool valid_host(const std::string& host, EndpointRole role, std::string* problem) {
  if (host.empty()) {
    *problem = "the host is missing (e.g. 127.0.0.1)";
    return false;
  }
  if (host == "*") {
    if (role == EndpointRole::kBind) return true;
    *problem = "a client connects to one host, not '*' (e.g. 127.0.0.1 or the server's name)";
    return false;
  }
  if (host.front() == '[') {
    const bool ok = host.size() > 2 && host.back() == ']' &&
                    std::all_of(host.begin() + 1, host.end() - 1, ipv6_character);
    if (!ok) *problem = "the IPv6 host '" + host + "' is malformed (e.g. [::1])";
    return ok;
  }
  if (!std::all_of(host.begin(), host.end(), host_character)) {
    *problem = "the host '" + host + "' has characters a host name or address cannot have";
    return false;
  }
  return true;
}

std::optional<EndpointAddress> parse_tcp(const std::string& rest, EndpointRole role,
                                         std::string* problem) {
  if (rest.find(';') != std::string::npos) {
    *problem = "source addresses (tcp://SOURCE;HOST:PORT) are not supported";
    return std::nullopt;
  }
  const std::size_t colon = rest.rfind(':');
  const std::size_t bracket = rest.rfind(']');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) {
    *problem = "the port is missing (tcp://HOST:PORT, e.g. tcp://127.0.0.1:5570)";
    return std::nullopt;
  }
  EndpointAddress address;
  address.scheme = "tcp";
  address.host = rest.substr(0, colon);
  if (!valid_host(address.host, role, problem)) return std::nullopt;
  const std::optional<int> port = parse_port(rest.substr(colon + 1), role, problem);
  if (!port) return std::nullopt;
  address.port = *port;
  return address;
}

std::optional<EndpointAddress> parse_ipc(const std::string& path, EndpointRole role,
                                         std::string* problem) {
  if (path.empty()) {
    *problem = "the socket path is missing (ipc:///run/slicestream/data)";
    return std::nullopt;
  }
  if (path == "*" && role == EndpointRole::kConnect) {
    *problem = "a client needs the socket's path, not '*'";
    return std::nullopt;
  }
  if (path.size() > kMaxIpcPath) {
    *problem = "the socket path has " + std::to_string(path.size()) +
               " characters; a Unix socket path holds at most " + std::to_string(kMaxIpcPath);
    return std::nullopt;
  }
  return EndpointAddress{"ipc", "", 0, path};
}

}  // namespace

std::optional<EndpointAddress> parse_endpoint(const std::string& text, EndpointRules rules,
                                              std::string* problem) {
  std::string ignored;
  if (problem == nullptr) problem = &ignored;
  std::optional<EndpointAddress> address;
  const std::size_t separator = text.find("://");
  if (separator == std::string::npos) {
    *problem = "has no transport: write " + std::string(kForm);
  } else {
    const std::string scheme = text.substr(0, separator);
    const std::string rest = text.substr(separator + 3);
    if (scheme == "tcp") {
      address = parse_tcp(rest, rules.role, problem);
    } else if (scheme == "ipc") {
      address = parse_ipc(rest, rules.role, problem);
    } else if (scheme == "inproc" && rules.allow_inproc && !rest.empty()) {
      address = EndpointAddress{"inproc", "", 0, rest};
    } else if (scheme == "inproc") {
      *problem = "inproc:// reaches only sockets inside one process: use " + std::string(kForm);
    } else {
      *problem = "the transport '" + scheme + "://' is not one slicestream uses: write " +
                 std::string(kForm);
    }
  }
  if (!address) *problem = "'" + text + "': " + *problem;
  return address;
}

std::string endpoint_problem(const std::string& text, EndpointRules rules) {
  std::string problem;
  return parse_endpoint(text, rules, &problem) ? std::string() : problem;
}

const char* to_string(ServerEndpoint endpoint) {
  switch (endpoint) {
    case ServerEndpoint::kData:
      return "data";
    case ServerEndpoint::kSlices:
      return "slices";
    case ServerEndpoint::kRequests:
      return "requests";
  }
  return "unknown";
}

std::optional<std::string> server_endpoint(const std::string& server, ServerEndpoint endpoint,
                                           EndpointRole role, std::string* problem) {
  const int offset = static_cast<int>(endpoint);
  std::string address;
  if (server.empty() || server == "tcp://" || server == "ipc://") {
    *problem = "the server address is empty: give HOST, HOST:PORT, PORT or ipc://DIR";
    return std::nullopt;
  }
  if (server.rfind("ipc://", 0) == 0) {
    std::string directory = server.substr(6);
    while (directory.size() > 1 && directory.back() == '/')
      directory.pop_back();
    address = "ipc://" + directory + (directory == "/" ? "" : "/") + to_string(endpoint);
  } else {
    std::string rest = server.rfind("tcp://", 0) == 0 ? server.substr(6) : server;
    if (rest.find("://") != std::string::npos) {
      *problem = "'" + server + "': a server address is HOST, HOST:PORT, PORT or ipc://DIR";
      return std::nullopt;
    }
    std::string host = rest;
    std::string port_text;
    const std::size_t colon = rest.rfind(':');
    const std::size_t bracket = rest.rfind(']');
    const bool bare_ipv6 = rest.front() != '[' && rest.find(':') != colon;
    if (all_digits(rest)) {
      host = "127.0.0.1";
      port_text = rest;
    } else if (bare_ipv6) {
      host = "[" + rest + "]";
    } else if (colon != std::string::npos && (bracket == std::string::npos || colon > bracket)) {
      host = rest.substr(0, colon);
      port_text = rest.substr(colon + 1);
    }
    int base = kDefaultBasePort;
    if (!port_text.empty()) {
      const std::optional<int> port = parse_port(port_text, EndpointRole::kConnect, problem);
      if (!port) {
        *problem = "'" + server + "': " + *problem;
        return std::nullopt;
      }
      if (*port > kMaxPort - 2) {
        *problem =
            "'" + server + "': the base port is at most 65533 (it and the next two are used)";
        return std::nullopt;
      }
      base = *port;
    }
    address = "tcp://" + host + ":" + std::to_string(base + offset);
  }
  if (!parse_endpoint(address, EndpointRules{role, false}, problem)) return std::nullopt;
  return address;
}

}  // namespace slicestream::cli
