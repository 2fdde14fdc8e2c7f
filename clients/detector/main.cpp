// slicestream-detector: a detector simulator (analytic phantom) and replayer (DXchange HDF5, TIFF)
// that streams scans to slicestream-server's data endpoint.
#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>

#include "cli/version.hpp"
#include "clients/detector/detector_cli.hpp"
#include "clients/detector/detector_commands.hpp"

namespace {

std::atomic<bool> stop_requested{false};

void on_signal(int) {
  stop_requested = true;
}

// Without SA_RESTART, so that a send blocked by back-pressure returns (EINTR) on Ctrl-C.
void install_signal_handlers() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "slicestream-detector: streams simulated or recorded tomography scans to "
      "slicestream-server.\n"
      "  simulate --preset flexray|highspeed|tomobank   the 3D Shepp-Logan phantom, exact\n"
      "  replay hdf5 FILE.h5                             a DXchange scan\n"
      "  replay tiff 'DIR|GLOB|FILE' [--darks ..] [--flats ..]   a TIFF stack",
      "slicestream-detector"};
  slicestream::cli::add_version_flag(app, "slicestream-detector");
  slicestream::detector::DetectorCommand command;
  slicestream::detector::add_detector_cli(app, command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  install_signal_handlers();
  try {
    return slicestream::detector::run_detector(command, std::cout, std::cerr, stop_requested);
  } catch (const std::exception& error) {
    std::cerr << "slicestream-detector: error: " << error.what() << std::endl;
    return 1;
  }
}
