// ZeroMQ CURVE keys (libzmq's own: Curve25519, Z85 text) and their files, shared by the server
// (its key pair, the allowed clients) and the clients (their key pair, the server's public key),
// and written by `slicestream-ctl keygen` (docs/operations.md, "Authentication").
//
// A key file holds one 40-character Z85 key on a line of its own; empty lines and lines starting
// with '#' are comments. A secret key file holds the secret key (its public key is derived); a
// public key file the public key; an allowed-clients file one public key per line.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace slicestream {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;
};

// A key file that cannot be read or holds no valid key: the message names the file and the line.
class CurveKeyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether CURVE is available in this libzmq (Debian's is built with libsodium).
bool curve_available();

CurveKeyPair generate_curve_key_pair();
// Throws CurveKeyError.
CurveKeyPair read_curve_secret_key(const std::string& path);
std::string read_curve_public_key(const std::string& path);
std::vector<std::string> read_curve_public_keys(const std::string& path);
// `<prefix>.key` (the secret key, readable by its owner only) and `<prefix>.pub` (the public key);
// throws CurveKeyError when a file exists already or cannot be written.
void write_curve_key_pair(const CurveKeyPair& keys, const std::string& prefix);

}  // namespace slicestream
