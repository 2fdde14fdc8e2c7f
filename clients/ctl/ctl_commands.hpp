// slicestream-ctl's subcommands. Each registers itself on the app; its callback stores the exit
// status (ctl_exit codes) in *status.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "clients/common/client_security.hpp"

namespace slicestream::ctl {

// Exit statuses shared by every subcommand (CLI11 uses its own for bad arguments).
inline constexpr int kExitOk = 0;
inline constexpr int kExitReplyError = 2;  // the server answered with a non-OK code
inline constexpr int kExitNoAnswer = 3;    // timeout, unreachable, malformed answer
inline constexpr int kExitFileError = 4;   // an image could not be written

struct CtlContext {
  std::string requests = "tcp://127.0.0.1:5572";
  std::string slices = "tcp://127.0.0.1:5571";
  double timeout_s = 5;
  std::string server_key_file;  // CURVE: the server's public key
  std::string client_key_file;  // CURVE: our secret key
  int timeout_ms() const { return static_cast<int>(timeout_s * 1000); }
  // Plain or CURVE, from the key files (read once); throws client::ClientError when a file is
  // missing or malformed.
  const client::ClientSecurity& security() const;

 private:
  mutable std::optional<client::ClientSecurity> security_;
};

void add_slice_commands(CLI::App& app, const CtlContext& context, int* status);
void add_status_command(CLI::App& app, const CtlContext& context, int* status);
void add_params_command(CLI::App& app, const CtlContext& context, int* status);
void add_watch_command(CLI::App& app, const CtlContext& context, int* status);
void add_refine_command(CLI::App& app, const CtlContext& context, int* status);
void add_capture_command(CLI::App& app, const CtlContext& context, int* status);
void add_keygen_command(CLI::App& app, int* status);
void add_volume_command(CLI::App& app, const CtlContext& context, int* status);

}  // namespace slicestream::ctl
