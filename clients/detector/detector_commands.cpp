#include "clients/detector/detector_commands.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "clients/detector/capture_replay_source.hpp"
#include "clients/detector/detector_preset.hpp"
#include "clients/detector/dxchange_file.hpp"
#include "clients/detector/number_file.hpp"
#include "clients/detector/tiff_stack.hpp"
#include "kernels/geometry_warnings.hpp"

namespace slicestream::detector {

namespace {

// A geometry the server accepts but that cannot be meant (geometry_warnings.hpp); the server
// reports it too, as an event.
void warn_about_geometry(const ResolvedGeometry& geometry, std::ostream& err) {
  const std::string warning = geometry_warning(geometry.slot_geometry(), geometry.volume());
  if (!warning.empty()) err << "warning: " << warning << "\n";
}

constexpr double kPi = 3.14159265358979323846;
constexpr int kDefaultCalibrationFrames = 10;

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}

PixelType parse_pixel_type(const std::string& name) {
  if (name == "uint32") return PixelType::kUint32;
  if (name == "float32") return PixelType::kFloat32;
  return PixelType::kUint16;
}

Placement parse_placement(const std::string& name) {
  return name == "angle" ? Placement::kAngle : Placement::kPosition;
}

double wire_max(PixelType type) {
  switch (type) {
    case PixelType::kUint16:
      return 65535.0;
    case PixelType::kUint32:
      return 4294967295.0;
    case PixelType::kFloat32:
      break;
  }
  return INFINITY;
}

// The geometry flags shared by simulate and replay: beam, distances, pixel size, offsets, volume,
// vectors. The caller supplies the defaults (a preset's or the replay defaults).
GeometrySpec geometry_from_flags(const GeometryFlags& flags, BeamKind default_beam,
                                 double default_pixel_mm, double default_sod_mm,
                                 double default_odd_mm) {
  GeometrySpec spec;
  spec.beam = flags.beam.empty() ? default_beam
                                 : (flags.beam == "cone" ? BeamKind::kCone : BeamKind::kParallel);
  const bool given_distances = flags.source_origin_mm >= 0 || flags.origin_detector_mm >= 0;
  if (spec.beam == BeamKind::kCone) {
    spec.source_origin_mm = flags.source_origin_mm >= 0 ? flags.source_origin_mm : default_sod_mm;
    spec.origin_detector_mm =
        flags.origin_detector_mm >= 0 ? flags.origin_detector_mm : default_odd_mm;
    require(spec.source_origin_mm > 0 && spec.origin_detector_mm >= 0,
            "cone beam needs the source-origin and origin-detector distances: --sod MM --odd MM");
  } else {
    require(!given_distances, "--sod and --odd apply to cone beam only (add --geometry cone)");
  }
  spec.pixel_width_mm = flags.pixel_size_mm.empty() ? default_pixel_mm : flags.pixel_size_mm[0];
  spec.pixel_height_mm =
      flags.pixel_size_mm.size() > 1 ? flags.pixel_size_mm[1] : spec.pixel_width_mm;
  if (!flags.detector_offset_mm.empty()) spec.detector_offset_u_mm = flags.detector_offset_mm[0];
  if (flags.detector_offset_mm.size() > 1) spec.detector_offset_v_mm = flags.detector_offset_mm[1];
  if (!flags.volume_mm.empty()) {
    const std::vector<double>& v = flags.volume_mm;
    require(v.size() == 6, "--volume needs 6 numbers: xmin,ymin,zmin,xmax,ymax,zmax");
    require(v[0] < v[3] && v[1] < v[4] && v[2] < v[5],
            "--volume needs xmin < xmax, ymin < ymax and zmin < zmax");
    spec.volume = VolumeBox{{v[0], v[1], v[2]}, {v[3], v[4], v[5]}};
  }
  if (!flags.vectors_file.empty()) {
    spec.vectors = read_number_file(flags.vectors_file);
    require(!spec.vectors.empty() && spec.vectors.size() % 12 == 0,
            flags.vectors_file + ": needs 12 numbers per projection (ASTRA s|r, d, u, v); has " +
                std::to_string(spec.vectors.size()));
  }
  return spec;
}

int arc_for(const GeometryFlags& flags, BeamKind beam) {
  const int arc = flags.arc_deg != 0 ? flags.arc_deg : (beam == BeamKind::kCone ? 360 : 180);
  require(beam == BeamKind::kParallel || arc == 360,
          "cone beam needs --arc 360: a half rotation would need Parker short-scan weights, "
          "which the server does not apply");
  return arc;
}

std::string format_rate(double fps) {
  std::ostringstream text;
  text << fps;  // 83, 12800, 0.5: no trailing zeros
  return text.str();
}

std::uint64_t wall_clock_ms() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

std::string describe_simulation(const SimulationConfig& c, const PhantomScanSource& source,
                                const std::string& preset) {
  const ResolvedGeometry& g = source.geometry();
  const GeometrySpec& s = g.spec();
  const VolumeBox& box = g.volume();
  std::ostringstream text;
  text << "simulate: preset " << preset << ", " << to_string(g.beam()) << " beam";
  if (g.beam() == BeamKind::kCone) {
    text << " (SOD " << s.source_origin_mm << " mm, ODD " << s.origin_detector_mm << " mm)";
  }
  text << ", detector " << g.detector().rows << "x" << g.detector().cols << " of "
       << s.pixel_width_mm << "x" << s.pixel_height_mm << " mm, " << g.slot_count()
       << " projections per rotation x "
       << (c.projections > 0 ? std::to_string(c.projections) + " projections"
                             : std::to_string(c.rotations) + " rotations")
       << ", " << c.darks << " darks, " << c.flats << " flats, "
       << to_string(c.detector.wire_pixel_type())
       << (c.detector.already_linear ? " line integrals" : "") << ", I0 " << c.detector.flat_counts
       << ", noise " << (c.detector.poisson_noise ? "on" : "off")
       << (c.dynamic ? ", dynamic inclusion" : "") << "\n  volume [" << box.min_mm.x << ", "
       << box.max_mm.x << "] x [" << box.min_mm.y << ", " << box.max_mm.y << "] x [" << box.min_mm.z
       << ", " << box.max_mm.z << "] mm, outer attenuation " << source.outer_attenuation_per_mm()
       << " /mm";
  return text.str();
}

}  // namespace

SimulationConfig make_simulation_config(const DetectorCommand& command,
                                        std::vector<std::string>& warnings) {
  const SimulateFlags& f = command.simulate;
  const GeometryFlags& gf = command.geometry;
  const DetectorPreset& preset = find_preset(f.preset);
  SimulationConfig c;
  c.geometry = geometry_from_flags(gf, preset.beam, preset.pixel_size_mm,
                                   preset.beam == BeamKind::kCone ? preset.source_origin_mm : -1,
                                   preset.beam == BeamKind::kCone ? preset.origin_detector_mm : -1);
  GeometrySpec& g = c.geometry;
  g.detector = {f.rows > 0 ? f.rows : preset.detector.rows,
                f.cols > 0 ? f.cols : preset.detector.cols};
  const int arc_deg = arc_for(gf, g.beam);
  int slots = gf.projections_per_rotation > 0 ? gf.projections_per_rotation
                                              : preset.projections_per_180_deg * arc_deg / 180;
  if (!g.vectors.empty()) {
    const int vector_count = static_cast<int>(g.vectors.size() / 12);
    require(gf.projections_per_rotation == 0 || gf.projections_per_rotation == vector_count,
            "--projections-per-rotation differs from the number of vectors in " + gf.vectors_file);
    slots = vector_count;
  }
  const double arc_rad = arc_deg * kPi / 180.0;
  for (int k = 0; k < slots; ++k)
    g.slot_angles_rad.push_back(arc_rad * k / slots);
  c.placement = parse_placement(command.stream.placement);
  c.angle_step_rad = arc_rad / slots;

  c.detector.already_linear = f.already_linear;
  require(!f.already_linear || f.pixel_type.empty() || f.pixel_type == "float32",
          "--already-linear sends float32 line integrals; drop --pixel-type " + f.pixel_type);
  require(!f.already_linear || (f.darks <= 0 && f.flats <= 0),
          "--already-linear sends line integrals: --darks and --flats do not apply");
  c.detector.pixel_type = f.already_linear ? PixelType::kFloat32 : parse_pixel_type(f.pixel_type);
  c.darks = f.darks >= 0 ? f.darks : (f.already_linear ? 0 : kDefaultCalibrationFrames);
  c.flats = f.flats >= 0 ? f.flats : (f.already_linear ? 0 : kDefaultCalibrationFrames);
  c.detector.flat_counts = f.flat_intensity;
  c.detector.dark_counts = f.dark_level;
  c.detector.poisson_noise = f.noise;
  c.detector.seed = f.seed;
  const double brightest =
      f.dark_level + f.flat_intensity + (f.noise ? 5 * std::sqrt(f.flat_intensity) : 0);
  if (!f.already_linear && brightest > wire_max(c.detector.pixel_type)) {
    warnings.push_back("open-beam counts (dark " + std::to_string(f.dark_level) + " + I0 " +
                       std::to_string(f.flat_intensity) + ") saturate " +
                       to_string(c.detector.pixel_type) +
                       " pixels: lower --flat-intensity or use --pixel-type uint32");
  }
  c.rotations = f.rotations;
  c.projections = f.frames;
  c.supersample = f.supersample;
  c.dynamic = f.dynamic;
  c.attenuation_per_mm = f.attenuation_per_mm;
  c.threads = f.threads > 0 ? f.threads
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  c.cache_limit_bytes = static_cast<std::size_t>(f.cache_limit_mb * 1024.0 * 1024.0);
  c.description = command.stream.description.empty()
                      ? "slicestream-detector simulate --preset " + f.preset
                      : command.stream.description;
  return c;
}

ReplayConfig make_replay_config(const DetectorCommand& command) {
  const ReplayFlags& f = command.replay;
  const GeometryFlags& gf = command.geometry;
  ReplayConfig c;
  c.geometry = geometry_from_flags(gf, BeamKind::kParallel, 1.0, -1, -1);
  c.arc_deg = arc_for(gf, c.geometry.beam);
  if (!f.angles_file.empty()) c.angles_deg = read_number_file(f.angles_file);
  c.projections_per_rotation = gf.projections_per_rotation;
  c.repeat = f.repeat;
  c.flip_rows = f.flip_rows;
  c.already_linear = f.already_linear;
  c.placement = parse_placement(command.stream.placement);
  const std::string source =
      command.mode == DetectorMode::kReplayHdf5 ? f.hdf5_file : f.tiff_projections;
  c.description = command.stream.description.empty() ? "slicestream-detector replay " + source
                                                     : command.stream.description;
  return c;
}

StreamOptions make_stream_options(const DetectorCommand& command, double default_fps) {
  StreamOptions options;
  options.endpoint = command.stream.data_endpoint;
  if (!command.stream.no_confirm) options.requests_endpoint = command.stream.requests_endpoint;
  options.confirm_timeout_s = command.stream.confirm_timeout_s;
  options.fps = command.stream.fps >= 0 ? command.stream.fps : default_fps;
  options.scan_id = command.stream.scan_id != 0 ? command.stream.scan_id : wall_clock_ms();
  options.send_hwm = command.stream.send_hwm;
  options.progress = !command.stream.quiet;
  options.interactive_progress = isatty(STDERR_FILENO) != 0;
  options.security = client::client_security_from_files(command.stream.server_key_file,
                                                        command.stream.client_key_file);
  return options;
}

int run_detector(const DetectorCommand& command, std::ostream& out, std::ostream& err,
                 const std::atomic<bool>& stop) {
  const bool verbose = !command.stream.quiet;
  const StreamOptions options =
      make_stream_options(command, command.mode == DetectorMode::kSimulate
                                       ? find_preset(command.simulate.preset).frame_rate_hz
                                       : 0);
  // Once the flags and files are known to be good, and before the (possibly long) precomputation:
  // a server that cannot confirm the scan is reported before anything is computed or sent.
  std::unique_ptr<client::ScanConfirmer> confirmer;
  auto connect_server = [&] {
    if (!options.requests_endpoint.empty()) confirmer = connect_confirmation(options);
  };
  std::unique_ptr<FrameSource> source;
  if (command.mode == DetectorMode::kSimulate) {
    std::vector<std::string> warnings;
    SimulationConfig config = make_simulation_config(command, warnings);
    for (const std::string& warning : warnings)
      err << "warning: " << warning << "\n";
    auto simulator = std::make_unique<PhantomScanSource>(config);
    warn_about_geometry(simulator->geometry(), err);
    if (verbose) err << describe_simulation(config, *simulator, command.simulate.preset) << "\n";
    connect_server();
    if (!simulator->cached()) {
      err << "warning: the precomputed rotation would exceed --cache-limit-mb; every frame is "
             "computed while streaming, which may limit the frame rate\n";
    }
    const auto start = std::chrono::steady_clock::now();
    const bool terminal = isatty(STDERR_FILENO) != 0;
    if (verbose && simulator->cached()) {
      err << "precomputing " << simulator->distinct_positions() << " projections on "
          << config.threads << " threads" << (terminal ? "" : "\n") << std::flush;
    }
    const bool complete = simulator->prepare(
        [&](int done, int total) {
          if (verbose && terminal && (done == total || done % 4 == 0)) {
            err << "\rprecomputing projections " << done << "/" << total << std::flush;
          }
        },
        &stop);
    if (!complete) {
      err << "\ninterrupted before streaming\n";
      return kExitInterrupted;
    }
    if (verbose && simulator->cached()) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      err << (terminal ? " " : "  ") << "done in " << format_duration(seconds) << " ("
          << simulator->cache_bytes() / (1 << 20) << " MiB)\n";
    }
    source = std::move(simulator);
  }
  std::unique_ptr<RecordedScan> scan;
  if (command.mode != DetectorMode::kSimulate) {
    if (command.mode == DetectorMode::kReplayHdf5) {
      const ReplayFlags& f = command.replay;
      auto file = std::make_unique<DxchangeFile>(
          f.hdf5_file,
          DxchangeLayout{f.projections_dataset, f.flats_dataset, f.darks_dataset, f.theta_dataset});
      if (!f.ignore_capture && CaptureReplaySource::is_capture(*file)) {
        auto capture =
            std::make_unique<CaptureReplaySource>(std::move(file), command.stream.description);
        if (verbose) {
          err << "replay: " << capture->recording().describe()
              << "; a slicestream capture: its own ScanBegin and frame placements\n";
        }
        for (const std::string& warning : capture->warnings())
          err << "warning: " << warning << "\n";
        connect_server();
        source = std::move(capture);
      } else {
        scan = std::move(file);
      }
    } else {
      scan = std::make_unique<TiffStack>(TiffStackPaths{
          command.replay.tiff_projections, command.replay.tiff_darks, command.replay.tiff_flats});
    }
  }
  if (!source) {
    ReplayConfig config = make_replay_config(command);
    auto replay = std::make_unique<ReplaySource>(std::move(scan), config);
    if (verbose) {
      err << "replay: " << replay->recording().describe() << "; "
          << to_string(replay->geometry().beam()) << " beam, " << replay->geometry().slot_count()
          << " projections per rotation\n";
    }
    for (const std::string& warning : replay->warnings())
      err << "warning: " << warning << "\n";
    warn_about_geometry(replay->geometry(), err);
    connect_server();
    source = std::move(replay);
  }
  if (stop.load()) return kExitInterrupted;

  if (verbose) {
    err << "streaming scan " << options.scan_id << " to " << options.endpoint << " at "
        << (options.fps > 0 ? format_rate(options.fps) + " frames/s" : std::string("full speed"))
        << (options.requests_endpoint.empty() ? std::string(", without confirmation")
                                              : ", confirmed through " + options.requests_endpoint)
        << " (Ctrl-C ends the scan cleanly)\n";
  }
  SteadyClock clock;
  const StreamSummary summary = stream_scan(*source, options, clock, stop, err, confirmer.get());
  out << format_summary(summary) << std::endl;
  if (summary.interrupted) {
    if (summary.confirmation_requested && !summary.confirmed) {
      err << "warning: scan " << summary.scan_id << " was interrupted and the server has not "
          << "confirmed its end: " << summary.confirmation << "\n";
    }
    return kExitInterrupted;
  }
  if (summary.confirmation_requested && !summary.confirmed) {
    err << "slicestream-detector: error: scan " << summary.scan_id
        << " may be incomplete on the server: " << summary.confirmation << "\n";
    return kExitNotConfirmed;
  }
  if (!summary.confirmation_requested && summary.connections_lost > 0) {
    err << "slicestream-detector: error: scan " << summary.scan_id
        << " may be incomplete on the server: the data connection dropped "
        << summary.connections_lost
        << " time(s) while streaming, and --no-confirm asked the server nothing\n";
    return kExitNotConfirmed;
  }
  return kExitDone;
}

}  // namespace slicestream::detector
