// slicestream-ctl: control client of slicestream-server (docs/protocol.md, "Clients").
//
// Exit status: 0 success, 2 the server answered with an error (printed with its message),
// 3 no answer (timeout, unreachable, malformed reply), 4 a file could not be written; CLI11's
// own codes for bad arguments.
#include <CLI/CLI.hpp>

#include "clients/ctl/ctl_commands.hpp"

int main(int argc, char** argv) {
  using namespace slicestream::ctl;
  CLI::App app{"slicestream-ctl: control client of slicestream-server"};
  CtlContext context;
  app.add_option("--requests", context.requests, "the server's requests endpoint")
      ->capture_default_str();
  app.add_option("--slices", context.slices, "the server's slices endpoint")->capture_default_str();
  app.add_option("--timeout", context.timeout_s, "seconds to wait for a reply")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--server-key", context.server_key_file,
                 "CURVE: the server's public key file (a server started with --curve-secret-key)")
      ->check(CLI::ExistingFile);
  app.add_option("--client-key", context.client_key_file,
                 "CURVE: this client's secret key file (its public key among the server's "
                 "--curve-clients)")
      ->check(CLI::ExistingFile);
  app.require_subcommand(1);
  int status = kExitOk;
  add_slice_commands(app, context, &status);
  add_status_command(app, context, &status);
  add_params_command(app, context, &status);
  add_watch_command(app, context, &status);
  add_refine_command(app, context, &status);
  add_capture_command(app, context, &status);
  add_keygen_command(app, &status);
  CLI11_PARSE(app, argc, argv);
  return status;
}
