// The one version every slicestream program reports (--version).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace slicestream::cli {

// The project's version (CMake's PROJECT_VERSION), e.g. "0.1.0".
const char* version();

// Adds --version, which prints "<program> <version>" and exits 0.
void add_version_flag(CLI::App& app, const std::string& program);

}  // namespace slicestream::cli
