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

// Exit statuses of slicestream-detector (errors thrown by run_detector exit with 1, bad
// arguments with CLI11's codes).
constexpr int kExitDone = 0;          // sent, and the server confirmed the whole scan
constexpr int kExitNotConfirmed = 3;  // sent, but the server did not confirm (may be incomplete)
constexpr int kExitInterrupted = 130;

// Runs the parsed command: messages to `err`, the final summary to `out`. Returns the process
// exit code (above); throws on errors (nothing sent, or a send or the source failed).
int run_detector(const DetectorCommand& command, std::ostream& out, std::ostream& err,
                 const std::atomic<bool>& stop);

}  // namespace slicestream::detector
