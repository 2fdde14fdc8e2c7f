#include "clients/common/client_security.hpp"

#include <stdexcept>

#include "wire/curve_keys.hpp"

namespace slicestream::client {

ClientSecurity client_security_from_files(const std::string& server_public_key_file,
                                          const std::string& client_secret_key_file) {
  if (server_public_key_file.empty() && client_secret_key_file.empty()) return {};
  if (server_public_key_file.empty() || client_secret_key_file.empty()) {
    throw std::runtime_error(
        "CURVE needs both the server's public key (--server-key) and the client's secret key "
        "(--client-key)");
  }
  const CurveKeyPair own = read_curve_secret_key(client_secret_key_file);
  return ClientSecurity{CurveClientKeys{read_curve_public_key(server_public_key_file),
                                        own.public_key, own.secret_key}};
}

}  // namespace slicestream::client
