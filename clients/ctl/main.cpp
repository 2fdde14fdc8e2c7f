// slicestream-ctl: control client of slicestream-server (docs/protocol.md, "Clients").
//
// Exit status: 0 success, 2 the server answered with an error (printed with its message),
// 3 no answer (timeout, unreachable, malformed reply), 4 a file could not be written; CLI11's
// own codes for bad arguments.
#include <CLI/CLI.hpp>

#include "cli/endpoint_options.hpp"
#include "cli/number_checks.hpp"
#include "cli/version.hpp"
#include "clients/ctl/ctl_commands.hpp"

int main(int argc, char** argv) {
  using namespace slicestream::ctl;
  CLI::App app{"slicestream-ctl: control client of slicestream-server"};
  CtlContext context;
  namespace cli = slicestream::cli;
  cli::add_version_flag(app, "slicestream-ctl");
  const CLI::Validator connectable = cli::endpoint_check(cli::EndpointRole::kConnect);
  CLI::Option* requests =
      app.add_option("--requests", context.requests, "the server's requests endpoint")
          ->check(connectable)
          ->capture_default_str();
  CLI::Option* slices = app.add_option("--slices", context.slices, "the server's slices endpoint")
                            ->check(connectable)
                            ->capture_default_str();
  cli::add_server_address_option(
      app, "--server", cli::EndpointRole::kConnect,
      {{cli::ServerEndpoint::kRequests, requests, &context.requests},
       {cli::ServerEndpoint::kSlices, slices, &context.slices}},
      "the server's endpoints from one address: HOST[:PORT] (requests on PORT+2, slices on "
      "PORT+1; default port 5570) or ipc://DIR (DIR/requests, DIR/slices); --requests and "
      "--slices override it");
  app.add_option("--timeout", context.timeout_s, "seconds to wait for a reply")
      ->check(cli::positive())
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
  add_volume_command(app, context, &status);
  CLI11_PARSE(app, argc, argv);
  return status;
}
