// The flags of the tomop side: the adapters' data port and the RECAST3D bridge.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "server/tomop_config.hpp"

namespace slicestream::tomop {

void add_tomop_options(CLI::App& app, TomopConfig& config);

// Derived values and cross-field checks; empty when fine, else the problem.
std::string finalize_tomop_config(TomopConfig& config);

}  // namespace slicestream::tomop
