// The command line and config file of slicestream-server (CLI11). Every flag can also be given in
// the file named by --config, under the same name (TOML or INI; see
// server/slicestream-server.example.toml).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "server/server_config.hpp"

namespace slicestream {

// Registers every option on `app`, bound to the fields of `config` (whose values are defaults).
void add_server_options(CLI::App& app, ServerConfig& config);

// After parsing: derived values, the server's cross-field checks and the pipeline's check of its
// settings (pipeline_config_problem); empty when fine, else the problem.
std::string finalize_server_config(ServerConfig& config);

}  // namespace slicestream
