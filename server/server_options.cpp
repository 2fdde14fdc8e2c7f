#include "server/server_options.hpp"

#include <string>
#include <utility>
#include <vector>

#include "cli/config_file_check.hpp"
#include "cli/endpoint_options.hpp"
#include "cli/number_checks.hpp"
#include "server/capture/capture_options.hpp"
#include "server/http/http_endpoint.hpp"
#include "server/tomop_options.hpp"

namespace slicestream {

namespace {

template <typename Enum, std::size_t N>
std::vector<std::pair<std::string, Enum>> choices_of(const NameTable<Enum, N>& table) {
  std::vector<std::pair<std::string, Enum>> choices;
  for (const auto& [value, name] : table)
    choices.emplace_back(name, value);
  return choices;
}

std::vector<std::pair<std::string, FilterWindow>> filter_choices() {
  std::vector<std::pair<std::string, FilterWindow>> choices;
  for (FilterWindow window : {FilterWindow::kRamLak, FilterWindow::kSheppLogan,
                              FilterWindow::kCosine, FilterWindow::kHamming, FilterWindow::kHann}) {
    choices.emplace_back(to_string(window), window);
  }
  return choices;
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

// A number checked by its owner's check (pipeline/messages/parameters.hpp), so that each range is
// written once.
CLI::Validator checked_by(std::string (*problem)(double)) {
  return CLI::Validator(
      [problem](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return "'" + text + "' is not a number";
        return problem(value);
      },
      "");
}

const CLI::Validator kNonNegative = cli::non_negative();
const CLI::Validator kPositive = cli::positive();

void add_endpoint_options(CLI::App& app, ServerConfig& config) {
  const char* group = "Endpoints";
  const CLI::Validator bindable = cli::endpoint_check(cli::EndpointRole::kBind);
  EndpointAddresses& e = config.endpoints;
  CLI::Option* data = app.add_option("--data", e.data, "data endpoint (PULL, detector frames in)")
                          ->check(bindable)
                          ->group(group);
  CLI::Option* slices =
      app.add_option("--slices", e.slices, "slices endpoint (PUB: slices, preview, events out)")
          ->check(bindable)
          ->group(group);
  CLI::Option* requests =
      app.add_option("--requests", e.requests, "requests endpoint (ROUTER: requests and replies)")
          ->check(bindable)
          ->group(group);
  cli::add_server_address_option(
      app, "--listen", cli::EndpointRole::kBind,
      {{cli::ServerEndpoint::kData, data, &e.data},
       {cli::ServerEndpoint::kSlices, slices, &e.slices},
       {cli::ServerEndpoint::kRequests, requests, &e.requests}},
      "all three endpoints from one address: HOST[:PORT] binds data, slices and requests on "
      "PORT, PORT+1, PORT+2 (default 5570), ipc://DIR on DIR/data, DIR/slices, DIR/requests; "
      "--data, --slices and --requests override it")
      ->group(group);
  app.add_option("--data-hwm", config.data_hwm,
                 "messages buffered at the data socket before the detector is pushed back")
      ->check(kPositive)
      ->group(group);
  app.add_option("--slices-hwm", config.slices_hwm,
                 "messages ZeroMQ queues per subscriber; beyond them the latest of each stream "
                 "waits in the server (a moved slice first)")
      ->check(kPositive)
      ->group(group);
}

void add_security_options(CLI::App& app, ServerConfig& config) {
  const char* group = "Authentication and encryption (ZeroMQ CURVE)";
  app.add_option("--curve-secret-key", config.curve_files.secret_key,
                 "the server's CURVE secret key file (slicestream-ctl keygen): every ZeroMQ "
                 "endpoint encrypts and admits only the clients of --curve-clients")
      ->check(CLI::ExistingFile)
      ->group(group);
  app.add_option("--curve-clients", config.curve_files.allowed_clients,
                 "file with the public keys of the clients admitted, one per line")
      ->check(CLI::ExistingFile)
      ->group(group);
}

void add_http_options(CLI::App& app, ServerConfig& config) {
  const char* group = "HTTP endpoint (viewer, /metrics, /api/status, /healthz, /ws)";
  HttpConfig& h = config.http;
  app.add_option("--http", h.listen,
                 "host:port to serve the viewer, metrics and WebSocket on (port 0: any free "
                 "one), or off")
      ->check(CLI::Validator(
          [](std::string& listen) -> std::string {
            if (listen == "off") return {};
            try {
              parse_listen_address(listen);  // the endpoint's own parser, at parse time
            } catch (const std::exception& error) {
              return error.what();
            }
            return {};
          },
          "HOST:PORT", "http listen address"))
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

void add_backend_options(CLI::App& app, ServerConfig& config) {
  const char* group = "Backend";
  add_choice<BackendKind>(app, "--backend", config.backend, choices_of(kBackendKindNames),
                          "compute backend (auto: the GPU when one is usable)")
      ->group(group);
  CpuBackendOptions& cpu = config.backend_options.cpu;
  app.add_option("--threads", cpu.threads, "CPU backend worker threads (0: all cores)")
      ->check(kNonNegative)
      ->group(group);
  app.add_option_function<std::size_t>(
         "--memory-limit-mb", [&cpu](std::size_t mb) { cpu.memory_limit_bytes = mb << 20; },
         "memory the CPU backend may use for a scan, MiB (0: 3/4 of physical memory)")
      ->group(group);
  cli::add_heap_retention_option(app, config.retain_freed_mb)->group(group);
  CudaSettings& cuda = config.backend_options.cuda;
  app.add_option("--cuda-device", cuda.device, "CUDA device index")
      ->check(kNonNegative)
      ->group(group);
  app.add_option("--cuda-reserve", cuda.reserve_bytes,
                 "GPU memory left free for the driver, cuFFT and other processes when a scan, a "
                 "slice or a refinement is admitted (e.g. 256MiB)")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
  add_choice<CudaInterpolation>(
      app, "--interpolation", cuda.interpolation, choices_of(kCudaInterpolationNames),
      "how the CUDA backend samples the projections: texture (hardware filtering of the store's "
      "one texture copy; a few 1e-4 from the CPU backend) or exact (fp32 weights, the CPU "
      "backend to rounding, slower)")
      ->group(group);
  add_choice<CudaTexels>(app, "--texels", cuda.texels, choices_of(kCudaTexelsNames),
                         "precision of the CUDA backend's stored projections with texture "
                         "interpolation: fp16 (half the memory and bytes read; values beyond "
                         "+-65504 clamped and counted), fp16-mirrored (the same values in pairs "
                         "of rows mirrored about the detector's centre: one fetch for two points "
                         "of a vertical slice through the scan's centre plane), fp32, or auto "
                         "(fp16-mirrored with texture interpolation, fp32 with exact)")
      ->group(group);
  app.add_option("--cuda-graphs", cuda.use_graphs,
                 "replay each stage's per-frame work as one CUDA graph (false: kernel by kernel)")
      ->group(group);
  app.add_option("--readback-lend", cuda.readback_lend_bytes,
                 "page-locked readback memory that published slices may keep until viewers have "
                 "them, instead of a copy on the host (e.g. 1GiB; 0: copy every slice)")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
  add_choice<CudaHostWait>(
      app, "--cuda-wait", cuda.host_wait, choices_of(kCudaHostWaitNames),
      "how the server's threads wait for the GPU: block (sleep until it signals; the cores stay "
      "free for the other threads and a detector on this machine), spin (quickest wake-up, a "
      "busy core per waiting thread), yield, or auto (CUDA's choice)")
      ->group(group);
}

void add_reconstruction_options(CLI::App& app, ServerConfig& config) {
  const char* group = "Reconstruction";
  Parameters& p = config.pipeline.parameters;
  add_choice<WindowMode>(
      app, "--mode", p.window_mode, choices_of(kWindowModeNames),
      "sliding: every frame updates every slice; per-rotation: publish once per rotation")
      ->group(group);
  add_choice<FilterWindow>(app, "--filter", p.filter.window, filter_choices(), "ramp filter window")
      ->group(group);
  app.add_option("--filter-cutoff", p.filter.cutoff, "filter cutoff, fraction of Nyquist (0, 1]")
      ->check(checked_by(filter_cutoff_problem))
      ->group(group);
  app.add_option("--cor-offset", p.rotation_axis_offset_px,
                 "centre-of-rotation offset, detector columns")
      ->check(checked_by(rotation_axis_offset_problem))
      ->group(group);
  app.add_option("--publish-rate", p.publish_rate_hz,
                 "most publications per second per slice (0: after every update)")
      ->check(checked_by(publish_rate_problem))
      ->group(group);
  app.add_option("--preview-size", config.pipeline.preview_size,
                 "preview volume edge in voxels (0: no preview)")
      ->group(group);
  app.add_option("--preview-interval", p.preview_interval_s, "seconds between preview volumes")
      ->check(checked_by(preview_interval_problem))
      ->group(group);
  app.add_option("--slice-size", config.pipeline.default_slice_size,
                 "edge in pixels of the three default slices (0: the detector width)")
      ->group(group);
  app.add_option("--queue-depth", config.pipeline.queue_depth, "items per pipeline stage queue")
      ->group(group);
  app.add_option("--max-projection-batch", config.pipeline.max_projection_batch,
                 "projections waiting together in the reconstruct queue are stored and "
                 "backprojected as one batch of at most this many (1: one by one); the CUDA "
                 "backend keeps this many scratch projections on the GPU")
      ->group(group);
  app.add_option("--refresh-rotations", config.pipeline.refresh_rotations,
                 "sliding window: rebuild slices from scratch every N rotations (0: never)")
      ->group(group);
  app.add_option("--max-slices", config.pipeline.max_slices, "most slices at once")->group(group);
  app.add_option("--scan-timeout", config.pipeline.scan_timeout_s,
                 "seconds without any message for the running scan after which it ends, "
                 "reported as scan_timeout (0: never)")
      ->check(kNonNegative)
      ->group(group);
  RefinementLimits& r = config.pipeline.refinement;
  app.add_option("--max-refined-slices", r.max_slices,
                 "most slices refined at once (SetRefinement)")
      ->group(group);
  app.add_option("--max-refine-iterations", r.max_iterations,
                 "most CGLS iterations per refinement a request may ask for")
      ->group(group);
  app.add_option("--max-refine-matrix", r.max_matrix_bytes,
                 "largest estimated system matrix of a refined slice (e.g. 2GiB); the automatic "
                 "residual checks' matrices together stay within it too")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
  app.add_option("--residual-interval", r.residual_interval_s,
                 "seconds between automatic data-consistency checks of each live axial slice "
                 "(each measures the first full window of projections after it is due; 0: off)")
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
  app.add_option("--max-reply-backlog", l.max_reply_backlog_bytes,
                 "GetSlice results queued for one requester that does not read them (e.g. "
                 "512MiB); more GetSlices are refused until it reads")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
  app.add_option("--max-request-bytes", l.max_request_bytes, "a request (e.g. 1MiB)")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
  app.add_option("--max-text-bytes", l.max_text_bytes,
                 "a string field from the wire, e.g. a scan description (longer: refused)")
      ->transform(CLI::AsSizeValue(false))
      ->group(group);
}

}  // namespace

void add_server_options(CLI::App& app, ServerConfig& config) {
  app.option_defaults()->always_capture_default();
  app.set_config("--config", "", "read options from a TOML or INI file (same names as the flags)");
  cli::require_known_config_keys(app);
  add_endpoint_options(app, config);
  add_security_options(app, config);
  add_http_options(app, config);
  add_backend_options(app, config);
  add_reconstruction_options(app, config);
  add_limit_options(app, config);
  tomop::add_tomop_options(app, config.tomop);
  add_capture_options(app, config.capture);
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
  const CurveFiles& curve = config.curve_files;
  if (curve.secret_key.empty() != curve.allowed_clients.empty()) {
    return "--curve-secret-key and --curve-clients go together";
  }
  if (!curve.secret_key.empty()) {
    if (!curve_available()) return "this libzmq has no CURVE support";
    try {
      config.security.curve = read_curve_secret_key(curve.secret_key);
      config.security.allowed_clients = read_curve_public_keys(curve.allowed_clients);
    } catch (const CurveKeyError& error) {
      return error.what();
    }
  }
  if (config.limits.max_frame_bytes == 0 || config.limits.max_header_bytes == 0 ||
      config.limits.max_request_bytes == 0) {
    return "--max-frame-bytes, --max-header-bytes and --max-request-bytes must be positive";
  }
  // One flag bounds slice sizes at the codec and in the pipeline.
  config.pipeline.max_slice_side = config.limits.max_slice_side;
  if (config.tomop.recast3d.slice_size > config.limits.max_slice_side) {
    return "--recast3d-slice-size must not exceed --max-slice-side";
  }
  if (std::string problem = tomop::finalize_tomop_config(config.tomop); !problem.empty()) {
    return problem;
  }
  if (std::string problem = finalize_capture_config(config.capture); !problem.empty()) {
    return problem;
  }
  return pipeline_config_problem(config.pipeline);
}

}  // namespace slicestream
