// Endpoint flags for every program: a check that refuses an invalid address when it is parsed,
// and one option (--server for the clients, --listen for the server) that sets all of a server's
// endpoints from one address. New endpoint flags (other protocols' ports, viewers' addresses) use
// endpoint_check() too, so that every program refuses the same mistakes with the same words.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/endpoint_address.hpp"

namespace slicestream::cli {

// Refuses what endpoint_problem() refuses, with its message.
CLI::Validator endpoint_check(EndpointRole role);

// One endpoint flag that a server address fills when the flag itself was not given.
struct EndpointFlag {
  ServerEndpoint endpoint;
  CLI::Option* option;   // e.g. --data; given explicitly (or in a config file), it wins
  std::string* address;  // where the flag stores its value
};

// Adds `name` (e.g. "--server"): HOST, HOST:PORT, PORT or ipc://DIR (server_endpoint()) sets
// every flag of `flags` that was not given itself.
CLI::Option* add_server_address_option(CLI::App& app, const std::string& name, EndpointRole role,
                                       std::vector<EndpointFlag> flags, const std::string& help);

}  // namespace slicestream::cli
