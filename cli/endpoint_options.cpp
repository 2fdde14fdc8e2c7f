#include "cli/endpoint_options.hpp"

#include <optional>
#include <utility>

namespace slicestream::cli {

CLI::Validator endpoint_check(EndpointRole role) {
  return CLI::Validator(
      [role](std::string& text) {
        return endpoint_problem(text, EndpointRules{role, false});
      },
      "ENDPOINT");
}

CLI::Option* add_server_address_option(CLI::App& app, const std::string& name, EndpointRole role,
                                       std::vector<EndpointFlag> flags, const std::string& help) {
  return app.add_option_function<std::string>(
      name,
      [name, role, flags = std::move(flags)](const std::string& server) {
        for (const EndpointFlag& flag : flags) {
          if (flag.option->count() > 0) continue;
          std::string problem;
          const std::optional<std::string> address =
              server_endpoint(server, flag.endpoint, role, &problem);
          if (!address) throw CLI::ValidationError(name, problem);
          *flag.address = *address;
        }
      },
      help);
}

}  // namespace slicestream::cli
