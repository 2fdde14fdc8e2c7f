// ZeroMQ endpoint addresses as users type them (tcp://HOST:PORT, ipc://PATH), checked before any
// socket sees them, and the three endpoints of one server derived from one address (--server).
// Every program's endpoint flags go through endpoint_problem(), so that a typo such as
// tcp://127.0.0.1:99999 is refused with a message instead of being bound somewhere else.
#pragma once

#include <optional>
#include <string>

namespace slicestream::cli {

// A bound address may use wildcards (tcp://*:5570, tcp://127.0.0.1:* for an ephemeral port); an
// address to connect to names one host and port.
enum class EndpointRole { kBind, kConnect };

struct EndpointAddress {
  std::string scheme;  // "tcp", "ipc" or "inproc"
  std::string host;    // tcp: name, IPv4, [IPv6] or "*" (bind)
  int port = 0;        // tcp: 1..65535; 0 for "*" (an ephemeral port, bind only)
  std::string path;    // ipc: file path or @abstract name; inproc: name
};

struct EndpointRules {
  EndpointRole role = EndpointRole::kConnect;
  // inproc:// only reaches sockets of the same process: for servers embedded in tests, never a
  // separate program's flag.
  bool allow_inproc = false;
};

// Parses `text`; on failure returns nothing and sets *problem to a sentence saying what is wrong
// and what a valid address looks like.
std::optional<EndpointAddress> parse_endpoint(const std::string& text, EndpointRules rules,
                                              std::string* problem);
// Empty when `text` is a valid endpoint under `rules`.
std::string endpoint_problem(const std::string& text, EndpointRules rules);

// Which of a server's endpoints an address names.
enum class ServerEndpoint { kData, kSlices, kRequests };
const char* to_string(ServerEndpoint endpoint);

// The default base port: data 5570, slices 5571, requests 5572.
inline constexpr int kDefaultBasePort = 5570;

// One address for all three endpoints of a server:
//   HOST             tcp://HOST:5570, :5571, :5572
//   HOST:PORT        tcp://HOST:PORT, PORT+1, PORT+2
//   PORT             tcp://127.0.0.1:PORT, PORT+1, PORT+2
//   tcp://HOST:PORT  as HOST:PORT
//   ipc://DIR        ipc://DIR/data, ipc://DIR/slices, ipc://DIR/requests
// Returns the endpoint's address, or nothing with *problem set.
std::optional<std::string> server_endpoint(const std::string& server, ServerEndpoint endpoint,
                                           EndpointRole role, std::string* problem);

}  // namespace slicestream::cli
