// From parsed flags to running streams: builds the simulator's and replayers' configurations
// (rejecting inconsistent flags with clear messages) and runs the chosen mode.
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "clients/detector/detector_cli.hpp"
#include "clients/detector/phantom_scan_source.hpp"
#include "clients/detector/replay_source.hpp"
#include "clients/detector/scan_streamer.hpp"

namespace slicestream::detector {

// Throw std::invalid_argument naming the flag at fault. `warnings` collects what the user
// should know but that is not an error (e.g. saturating counts).
SimulationConfig make_simulation_config(const DetectorCommand& command,
                                        std::vector<std::string>& warnings);
ReplayConfig make_replay_config(const DetectorCommand& command);
StreamOptions make_stream_options(const DetectorCommand& command, double default_fps);

// Runs the parsed command: messages to `err`, the final summary to `out`. Returns the process
// exit code (0 done, 130 interrupted); throws on errors.
int run_detector(const DetectorCommand& command, std::ostream& out, std::ostream& err,
                 const std::atomic<bool>& stop);

}  // namespace slicestream::detector
