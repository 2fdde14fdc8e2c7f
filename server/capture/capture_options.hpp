// The capture flags: --capture DIR, --capture-dir DIR, --capture-pretrigger-bytes,
// --capture-queue-bytes.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "server/capture/capture_config.hpp"

namespace slicestream {

void add_capture_options(CLI::App& app, CaptureConfig& config);

// Empty when fine, else the problem.
std::string finalize_capture_config(const CaptureConfig& config);

}  // namespace slicestream
