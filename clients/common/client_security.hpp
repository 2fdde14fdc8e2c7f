// How a client secures its ZeroMQ sockets: plain (the default, for a server on loopback), or
// CURVE (a server started with --curve-secret-key): the client knows the server's public key and
// has a key pair of its own whose public key is among the server's --curve-clients. Every client
// socket of the library (DataSender, RequestClient, ScanConfirmer, SliceSubscriber) takes one.
#pragma once

#include <optional>
#include <string>

#include <zmq.hpp>

namespace slicestream::client {

struct CurveClientKeys {
  std::string server_public_key;  // Z85
  std::string public_key;         // the client's own pair
  std::string secret_key;
};

struct ClientSecurity {
  std::optional<CurveClientKeys> curve;  // none: plain
};

// Applies `security` to `socket` before it connects.
inline void secure_client_socket(zmq::socket_t& socket, const ClientSecurity& security) {
  if (!security.curve) return;
  socket.set(zmq::sockopt::curve_serverkey, security.curve->server_public_key);
  socket.set(zmq::sockopt::curve_publickey, security.curve->public_key);
  socket.set(zmq::sockopt::curve_secretkey, security.curve->secret_key);
}

// From key files (wire/curve_keys.hpp): the server's public key file and the client's secret key
// file (both empty: plain; one without the other is an error). Throws std::runtime_error naming the
// file.
ClientSecurity client_security_from_files(const std::string& server_public_key_file,
                                          const std::string& client_secret_key_file);

}  // namespace slicestream::client
