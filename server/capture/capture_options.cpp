#include "server/capture/capture_options.hpp"

namespace slicestream {

void add_capture_options(CLI::App& app, CaptureConfig& config) {
  const char* group = "Capture (raw frames to DXchange HDF5, docs/operations.md)";
  CLI::Option* every_scan =
      app.add_option_function<std::string>(
             "--capture",
             [&config](const std::string& directory) {
               config.directory = directory;
               config.every_scan = true;
             },
             "record every scan into this directory ('slicestream-ctl capture stop' pauses)")
          ->group(group);
  app.add_option_function<std::string>(
         "--capture-dir",
         [&config](const std::string& directory) {
           config.directory = directory;
           config.every_scan = false;
         },
         "allow captures into this directory, started by 'slicestream-ctl capture start'")
      ->excludes(every_scan)
      ->group(group);
  app.add_option("--capture-pretrigger-bytes", config.pretrigger_bytes,
                 "frames kept for a capture started later: the scan's darks and flats, then its "
                 "newest projections (e.g. 256MiB)")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
  app.add_option("--capture-queue-bytes", config.queue_bytes,
                 "frames waiting for the disk; more are dropped from the capture and counted, "
                 "never waited for (e.g. 1GiB)")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
}

std::string finalize_capture_config(const CaptureConfig& config) {
  if (!config.directory.empty() && config.queue_bytes == 0) {
    return "--capture-queue-bytes must be positive";
  }
  return {};
}

}  // namespace slicestream
