// slicestream-ctl keygen: a CURVE key pair for the server or a client (docs/operations.md,
// "Authentication"), and the loading of the client's own keys for every other subcommand.
#include <iostream>
#include <memory>

#include "clients/common/client_error.hpp"
#include "clients/ctl/ctl_commands.hpp"
#include "wire/curve_keys.hpp"

namespace slicestream::ctl {

const client::ClientSecurity& CtlContext::security() const {
  if (!security_) {
    try {
      security_ = client::client_security_from_files(server_key_file, client_key_file);
    } catch (const std::runtime_error& error) {
      throw client::ClientError(error.what());
    }
  }
  return *security_;
}

void add_keygen_command(CLI::App& app, int* status) {
  auto prefix = std::make_shared<std::string>();
  CLI::App* keygen = app.add_subcommand(
      "keygen",
      "write a new CURVE key pair: PREFIX.key (secret, readable by its owner only) and "
      "PREFIX.pub (public: give it to the server's --curve-clients, or to clients as "
      "--server-key)");
  keygen->add_option("prefix", *prefix, "path and name of the two files, e.g. keys/beamline")
      ->required();
  keygen->callback([prefix, status] {
    if (!curve_available()) {
      std::cerr << "slicestream-ctl keygen: this libzmq has no CURVE support\n";
      *status = kExitFileError;
      return;
    }
    try {
      const CurveKeyPair keys = generate_curve_key_pair();
      write_curve_key_pair(keys, *prefix);
      std::cout << "wrote " << *prefix << ".key (secret) and " << *prefix << ".pub (public key "
                << keys.public_key << ")\n";
      *status = kExitOk;
    } catch (const CurveKeyError& error) {
      std::cerr << "slicestream-ctl keygen: " << error.what() << "\n";
      *status = kExitFileError;
    }
  });
}

}  // namespace slicestream::ctl
