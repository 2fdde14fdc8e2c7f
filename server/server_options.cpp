#include "server/server_options.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace slicestream {

namespace {

std::vector<std::pair<std::string, FilterWindow>> filter_names() {
  std::vector<std::pair<std::string, FilterWindow>> names;
  for (FilterWindow window : {FilterWindow::kRamLak, FilterWindow::kSheppLogan,
                              FilterWindow::kCosine, FilterWindow::kHamming, FilterWindow::kHann}) {
    names.emplace_back(to_string(window), window);
  }
  return names;
}

// A flag naming one of `choices`; an unknown name is refused with the list of known ones.
template <typename Enum>
CLI::Option* add_choice(CLI::App& app, const std::string& name, Enum& target,
                        const std::vector<std::pair<std::string, Enum>>& choices,
                        const std::string& help) {
  std::string names;
  std::string current;
  for (const auto& [choice, value] : choices) {
    names += (names.empty() ? "" : "|") + choice;
    if (value == target) current = choice;
  }
  return app
      .add_option_function<std::string>(
          name,
          [&target, choices, names, name](const std::string& text) {
            for (const auto& [choice, value] : choices) {
              if (CLI::detail::to_lower(text) == choice) {
                target = value;
                return;
              }
            }
            throw CLI::ValidationError(name, "'" + text + "' is not one of " + names);
          },
          help)
      ->option_text(names + " (default " + current + ")");
}

const CLI::Validator kNonNegative = CLI::NonNegativeNumber;
const CLI::Validator kPositive = CLI::PositiveNumber;

CLI::Validator cutoff_range() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const double value = std::stod(text);
        if (!(value > 0 && value <= 1)) return "must be in (0, 1]";
        return {};
      },
      "(0,1]");
}

void add_endpoint_options(CLI::App& app, ServerConfig& config) {
  const char* group = "Endpoints";
  app.add_option("--data", config.endpoints.data, "data endpoint (PULL, detector frames in)")
      ->group(group);
  app.add_option("--slices", config.endpoints.slices,
                 "slices endpoint (PUB: slices, preview, events out)")
      ->group(group);
  app.add_option("--requests", config.endpoints.requests,
                 "requests endpoint (ROUTER: requests and replies)")
      ->group(group);
  app.add_option("--data-hwm", config.data_hwm,
                 "messages buffered at the data socket before the detector is pushed back")
      ->check(kPositive)
      ->group(group);
  app.add_option("--slices-hwm", config.slices_hwm,
                 "publications queued per subscriber before a slow one misses some")
      ->check(kPositive)
      ->group(group);
}

void add_http_options(CLI::App& app, ServerConfig& config) {
  const char* group = "HTTP endpoint (viewer, /metrics, /api/status, /healthz, /ws)";
  HttpConfig& h = config.http;
  app.add_option("--http", h.listen,
                 "host:port to serve the viewer, metrics and WebSocket on (port 0: any free "
                 "one), or off")
      ->group(group);
  app.add_option("--http-root", h.root,
                 "folder of the viewer's files (default: found next to the program)")
      ->group(group);
  app.add_option("--http-max-connections", h.max_connections,
                 "HTTP and WebSocket connections open at once")
      ->check(kPositive)
      ->group(group);
  app.add_option("--ws-update-rate", h.max_update_rate_hz,
                 "most images per second per slice sent to one WebSocket client (0: no limit; "
                 "a slow client always gets the latest)")
      ->check(kNonNegative)
      ->group(group);
  app.add_option("--ws-request-rate", h.max_requests_per_s,
                 "most requests per second from one WebSocket client (0: no limit)")
      ->check(kNonNegative)
      ->group(group);
}

void add_reconstruction_options(CLI::App& app, ServerConfig& config) {
  const char* group = "Reconstruction";
  add_choice<BackendKind>(
      app, "--backend", config.backend,
      {{"cpu", BackendKind::kCpu}, {"cuda", BackendKind::kCuda}, {"auto", BackendKind::kAuto}},
      "compute backend (auto: the GPU when one is usable)")
      ->group(group);
  app.add_option("--threads", config.backend_options.cpu_threads,
                 "CPU backend worker threads (0: all cores)")
      ->check(kNonNegative)
      ->group(group);
  app.add_option_function<std::size_t>(
         "--memory-limit-mb",
         [&config](std::size_t mb) { config.backend_options.memory_limit_bytes = mb << 20; },
         "memory the CPU backend may use for a scan, MiB (0: 3/4 of physical memory)")
      ->group(group);
  app.add_option("--cuda-device", config.backend_options.cuda_device, "CUDA device index")
      ->check(kNonNegative)
      ->group(group);
  Parameters& p = config.pipeline.parameters;
  add_choice<WindowMode>(
      app, "--mode", p.window_mode,
      {{"sliding", WindowMode::kSlidingWindow}, {"rotation", WindowMode::kPerRotation}},
      "sliding: every frame updates every slice; rotation: publish once per rotation")
      ->group(group);
  add_choice<FilterWindow>(app, "--filter", p.filter.window, filter_names(), "ramp filter window")
      ->group(group);
  app.add_option("--filter-cutoff", p.filter.cutoff, "filter cutoff, fraction of Nyquist")
      ->check(cutoff_range())
      ->group(group);
  app.add_option("--cor-offset", p.rotation_axis_offset_px,
                 "centre-of-rotation offset, detector columns")
      ->group(group);
  app.add_option("--publish-rate", p.publish_rate_hz,
                 "most publications per second per slice (0: after every update)")
      ->check(kNonNegative)
      ->group(group);
  app.add_option("--preview-size", config.pipeline.preview_size,
                 "preview volume edge in voxels (0: no preview)")
      ->check(CLI::Range(0, 1024))
      ->group(group);
  app.add_option("--preview-interval", p.preview_interval_s, "seconds between preview volumes")
      ->check(kNonNegative)
      ->group(group);
  app.add_option("--slice-size", config.pipeline.default_slice_size,
                 "edge in pixels of the three default slices (0: the detector width)")
      ->check(kNonNegative)
      ->group(group);
  app.add_option("--queue-depth", config.pipeline.queue_depth, "items per pipeline stage queue")
      ->check(CLI::Range(1, 100000))
      ->group(group);
  app.add_option("--refresh-rotations", config.pipeline.refresh_rotations,
                 "sliding window: rebuild slices from scratch every N rotations")
      ->check(kPositive)
      ->group(group);
  app.add_option("--max-slices", config.pipeline.max_slices, "most slices at once")
      ->check(kPositive)
      ->group(group);
  RefinementLimits& r = config.pipeline.refinement;
  app.add_option("--max-refined-slices", r.max_slices,
                 "most slices refined at once (SetRefinement)")
      ->check(kPositive)
      ->group(group);
  app.add_option("--max-refine-iterations", r.max_iterations,
                 "most CGLS iterations per refinement a request may ask for")
      ->check(kPositive)
      ->group(group);
  app.add_option("--max-refine-matrix", r.max_matrix_bytes,
                 "largest estimated system matrix of a refined slice (e.g. 2GiB); the automatic "
                 "residual checks' matrices together stay within it too")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
  app.add_option("--residual-interval", r.residual_interval_s,
                 "seconds between automatic data-consistency checks of each live axial slice "
                 "(each measures the first full window of projections after it is due; 0: off)")
      ->check(CLI::Range(0.0, 86400.0))
      ->group(group);
}

void add_limit_options(CLI::App& app, ServerConfig& config) {
  const char* group = "Limits on input from the wire";
  WireLimits& l = config.limits;
  app.add_option("--max-detector-side", l.max_detector_side, "detector rows and columns")
      ->check(kPositive)
      ->group(group);
  app.add_option("--max-projections", l.max_projections_per_rotation, "projections per rotation")
      ->check(kPositive)
      ->group(group);
  app.add_option("--max-calibration-frames", l.max_calibration_frames,
                 "declared darks and flats, each")
      ->check(kPositive)
      ->group(group);
  app.add_option("--max-frame-bytes", l.max_frame_bytes, "one frame's payload (e.g. 512MiB)")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
  app.add_option("--max-header-bytes", l.max_header_bytes, "a data header (e.g. 16MiB)")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
  app.add_option("--max-slice-side", l.max_slice_side, "slice width and height")
      ->check(kPositive)
      ->group(group);
  app.add_option("--max-request-bytes", l.max_request_bytes, "a request (e.g. 1MiB)")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
}

}  // namespace

void add_server_options(CLI::App& app, ServerConfig& config) {
  app.option_defaults()->always_capture_default();
  app.set_config("--config", "", "read options from a TOML or INI file (same names as the flags)");
  add_endpoint_options(app, config);
  add_http_options(app, config);
  add_reconstruction_options(app, config);
  add_limit_options(app, config);
  app.add_option("--stats-interval", config.stats_interval_s,
                 "seconds between stats log lines (0: none)")
      ->check(kNonNegative)
      ->group("Logging");
  app.add_option("--log-level", config.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"},
                            CLI::ignore_case))
      ->group("Logging");
}

std::string finalize_server_config(ServerConfig& config) {
  if (config.limits.max_frame_bytes == 0 || config.limits.max_header_bytes == 0 ||
      config.limits.max_request_bytes == 0) {
    return "--max-frame-bytes, --max-header-bytes and --max-request-bytes must be positive";
  }
  if (!std::isfinite(config.pipeline.parameters.rotation_axis_offset_px) ||
      std::abs(config.pipeline.parameters.rotation_axis_offset_px) >
          config.limits.max_detector_side) {
    return "--cor-offset must be a finite number of columns within --max-detector-side";
  }
  if (config.pipeline.default_slice_size > config.limits.max_slice_side) {
    return "--slice-size must not exceed --max-slice-side";
  }
  config.pipeline.max_slice_side = config.limits.max_slice_side;
  return {};
}

}  // namespace slicestream
