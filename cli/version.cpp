#include "cli/version.hpp"

namespace slicestream::cli {

const char* version() {
  return SLICESTREAM_VERSION;
}

void add_version_flag(CLI::App& app, const std::string& program) {
  app.set_version_flag("--version", program + " " + version(), "print the version and exit");
}

}  // namespace slicestream::cli
