#include "clients/detector/detector_cli.hpp"

#include <memory>
#include <string>
#include <vector>

#include "cli/endpoint_options.hpp"
#include "cli/number_checks.hpp"

namespace slicestream::detector {

namespace {

const char* const kStreamGroup = "Streaming";

void add_stream_flags(CLI::App& app, StreamFlags& flags, bool simulate) {
  const CLI::Validator connectable = cli::endpoint_check(cli::EndpointRole::kConnect);
  CLI::Option* data = app.add_option("--data", flags.data_endpoint,
                                     "server data endpoint (ZeroMQ PUSH connects here)")
                          ->check(connectable)
                          ->capture_default_str()
                          ->group(kStreamGroup);
  CLI::Option* requests =
      app.add_option("--requests", flags.requests_endpoint,
                     "server requests endpoint: checked before streaming, and after ScanEnd the "
                     "detector stays connected until the server confirms there that it has the "
                     "whole scan (exit status 3 when it does not)")
          ->check(connectable)
          ->capture_default_str()
          ->group(kStreamGroup);
  cli::add_server_address_option(
      app, "--server", cli::EndpointRole::kConnect,
      {{cli::ServerEndpoint::kData, data, &flags.data_endpoint},
       {cli::ServerEndpoint::kRequests, requests, &flags.requests_endpoint}},
      "the server's endpoints from one address: HOST[:PORT] (data on PORT, requests on PORT+2; "
      "default port 5570) or ipc://DIR (DIR/data, DIR/requests); --data and --requests "
      "override it")
      ->group(kStreamGroup);
  app.add_option("--confirm-timeout", flags.confirm_timeout_s,
                 "seconds the server may go without progress on the scan (or without "
                 "answering) before the detector gives up waiting for its confirmation; the "
                 "check before streaming waits at most 10 s")
      ->check(cli::positive())
      ->capture_default_str()
      ->group(kStreamGroup);
  app.add_flag("--no-confirm", flags.no_confirm,
               "close right after ScanEnd without asking the server (one without a requests "
               "endpoint); overrides --requests. Over ipc:// the end of a scan the server "
               "pushes back on may then be lost")
      ->group(kStreamGroup);
  app.add_option("--fps", flags.fps,
                 simulate ? "frames per second, 0 = as fast as the server accepts (default: the "
                            "preset's detector frame rate)"
                          : "frames per second, 0 = as fast as the server accepts (default 0)")
      ->check(cli::non_negative())
      ->group(kStreamGroup);
  app.add_option("--scan-id", flags.scan_id, "scan id (default: the wall clock in ms)")
      ->group(kStreamGroup);
  app.add_option("--placement", flags.placement,
                 "position: frames name their slot of the rotation; angle: frames carry their "
                 "angle and the server keeps the last N (circular geometries)")
      ->check(CLI::IsMember({"position", "angle"}))
      ->capture_default_str()
      ->group(kStreamGroup);
  app.add_option("--send-hwm", flags.send_hwm,
                 "ZeroMQ send high-water mark in messages (default: ~256 MB of frames)")
      ->check(cli::positive())
      ->group(kStreamGroup);
  app.add_option("--description", flags.description, "free text sent in ScanBegin")
      ->group(kStreamGroup);
  app.add_flag("-q,--quiet", flags.quiet, "no progress line and no informational messages")
      ->group(kStreamGroup);
  app.add_option("--server-key", flags.server_key_file,
                 "CURVE: the server's public key file (a server started with --curve-secret-key)")
      ->check(CLI::ExistingFile)
      ->group(kStreamGroup);
  app.add_option("--client-key", flags.client_key_file,
                 "CURVE: this detector's secret key file (its public key among the server's "
                 "--curve-clients)")
      ->check(CLI::ExistingFile)
      ->group(kStreamGroup);
}

void add_geometry_flags(CLI::App& app, GeometryFlags& flags, bool simulate) {
  const std::string group = "Geometry";
  app.add_option("--geometry", flags.beam,
                 simulate ? "beam: parallel or cone (default: the preset's)"
                          : "beam: parallel or cone (default parallel)")
      ->check(CLI::IsMember({"parallel", "cone"}))
      ->group(group);
  app.add_option("--sod", flags.source_origin_mm, "cone beam: source-origin distance (mm)")
      ->check(cli::positive())
      ->group(group);
  app.add_option("--odd", flags.origin_detector_mm, "cone beam: origin-detector distance (mm)")
      ->check(cli::non_negative())
      ->group(group);
  app.add_option("--pixel-size", flags.pixel_size_mm,
                 simulate ? "detector pixel size in mm: S or W,H (default: the preset's)"
                          : "detector pixel size in mm: S or W,H (default 1)")
      ->delimiter(',')
      ->expected(1, 2)
      ->check(cli::positive())
      ->group(group);
  app.add_option("--detector-offset", flags.detector_offset_mm,
                 "shift of the detector centre in mm along its rows (u) and columns (v): U or U,V")
      ->delimiter(',')
      ->expected(1, 2)
      ->group(group);
  app.add_option("--volume", flags.volume_mm,
                 "reconstruction box in mm: xmin,ymin,zmin,xmax,ymax,zmax (default: the "
                 "detector's field of view at the rotation axis)")
      ->delimiter(',')
      ->expected(6)
      ->group(group);
  app.add_option("--projections-per-rotation", flags.projections_per_rotation,
                 simulate ? "projections per rotation, the server's window (default: the "
                            "preset's projections per 180 deg x arc/180)"
                          : "window length (default: all projections, or the number of vectors)")
      ->check(cli::positive())
      ->group(group);
  app.add_option("--arc", flags.arc_deg,
                 simulate ? "degrees per rotation: 360 (cone; default) or 180/360 (parallel; "
                            "default 180)"
                          : "degrees the projections cover when no angles are given (default "
                            "180, cone 360)")
      ->check(CLI::IsMember({180, 360}))
      ->group(group);
  app.add_option("--vectors", flags.vectors_file,
                 "ASTRA parallel3d_vec/cone_vec text file, 12 numbers per projection (needs "
                 "--volume)")
      ->group(group);
}

void add_simulate(CLI::App& app, DetectorCommand& command) {
  CLI::App* sim = app.add_subcommand(
      "simulate", "stream the analytic 3D Shepp-Logan phantom, projected exactly");
  SimulateFlags& f = command.simulate;
  const std::string scan = "Scan";
  sim->add_option("--preset", f.preset,
                  "detector set-up (KernelKit paper Table 1): flexray (cone, 400x600, 83 Hz), "
                  "highspeed (parallel, 1024x1024, 12.8 kHz), tomobank (parallel, 2016x1800, "
                  "1.3 kHz)")
      ->check(CLI::IsMember({"flexray", "highspeed", "tomobank"}))
      ->capture_default_str()
      ->group(scan);
  sim->add_option("--rows", f.rows, "detector rows (default: the preset's)")
      ->check(cli::positive())
      ->group(scan);
  sim->add_option("--cols", f.cols, "detector columns (default: the preset's)")
      ->check(cli::positive())
      ->group(scan);
  CLI::Option* rotations = sim->add_option("--rotations", f.rotations,
                                           "rotations to stream (positions repeat cyclically)")
                               ->check(cli::positive())
                               ->capture_default_str()
                               ->group(scan);
  sim->add_option("--frames", f.frames,
                  "projections to stream instead of whole rotations (the last rotation may be "
                  "partial; only that many positions are precomputed)")
      ->check(cli::positive())
      ->excludes(rotations)
      ->group(scan);
  sim->add_option("--darks", f.darks, "dark frames before the projections (default 10)")
      ->check(cli::non_negative())
      ->group(scan);
  sim->add_option("--flats", f.flats, "flat frames before the projections (default 10)")
      ->check(cli::non_negative())
      ->group(scan);
  sim->add_flag("--dynamic", f.dynamic,
                "add a small inclusion that circles, rises and dissolves during the scan")
      ->group(scan);
  sim->add_option("--supersample", f.supersample, "rays per pixel side (exact pixel averaging)")
      ->check(cli::in_range(1, 16))
      ->capture_default_str()
      ->group(scan);
  sim->add_option("--attenuation", f.attenuation_per_mm,
                  "attenuation of the phantom's outer shell per mm (default: the longest chord "
                  "integrates to 2, about 14% transmission)")
      ->check(cli::positive())
      ->group(scan);
  const std::string detector = "Detector";
  sim->add_option("--flat-intensity", f.flat_intensity, "I0: open-beam counts above the dark level")
      ->check(cli::positive())
      ->capture_default_str()
      ->group(detector);
  sim->add_option("--dark-level", f.dark_level, "counts without beam")
      ->check(cli::non_negative())
      ->capture_default_str()
      ->group(detector);
  sim->add_flag("--noise", f.noise, "Poisson photon noise")->group(detector);
  sim->add_option("--seed", f.seed, "noise seed (frames are reproducible per seed)")
      ->capture_default_str()
      ->group(detector);
  sim->add_option("--pixel-type", f.pixel_type,
                  "uint16 (clamped), uint32 or float32 (default uint16)")
      ->check(CLI::IsMember({"uint16", "uint32", "float32"}))
      ->group(detector);
  sim->add_flag("--already-linear", f.already_linear,
                "send line integrals as float32 (no darks, flats or -log on the server)")
      ->group(detector);
  sim->add_option("--threads", f.threads, "threads computing projections (default: all cores)")
      ->check(cli::positive())
      ->group(kStreamGroup);
  sim->add_option("--cache-limit-mb", f.cache_limit_mb,
                  "memory for the precomputed rotation; beyond it every frame is recomputed")
      ->check(cli::non_negative())
      ->capture_default_str()
      ->group(kStreamGroup);
  add_geometry_flags(*sim, command.geometry, true);
  add_stream_flags(*sim, command.stream, true);
  sim->callback([&command] { command.mode = DetectorMode::kSimulate; });
}

// `replay tiff` takes one projections argument; several mean a glob the shell expanded.
std::string one_projection_source(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return paths[0];
  throw CLI::ValidationError(
      "projections",
      "got " + std::to_string(paths.size()) + " paths (" + paths.front() + " ... " + paths.back() +
          "): the shell expanded an unquoted glob. Quote the pattern (replay tiff 'proj_*.tif'), "
          "or give the directory that holds the projections");
}

void add_replay_flags(CLI::App& app, DetectorCommand& command) {
  ReplayFlags& f = command.replay;
  app.add_option("--angles-file", f.angles_file,
                 "projection angles in degrees, one per projection (overrides the file's)");
  app.add_option("--repeat", f.repeat, "send the projections this many times (continuous rotation)")
      ->check(cli::positive())
      ->capture_default_str();
  app.add_flag("--flip-rows", f.flip_rows,
               "the files store row 0 at the top (most do); ASTRA's detector v points up");
  app.add_flag("--already-linear", f.already_linear, "the projections are float32 line integrals");
  add_geometry_flags(app, command.geometry, false);
  add_stream_flags(app, command.stream, false);
}

void add_replay(CLI::App& app, DetectorCommand& command) {
  CLI::App* replay = app.add_subcommand("replay", "stream a recorded scan from files");
  replay->require_subcommand(1);
  ReplayFlags& f = command.replay;

  CLI::App* hdf5 = replay->add_subcommand("hdf5", "DXchange HDF5 file (/exchange/data, ...)");
  hdf5->add_option("file", f.hdf5_file, "the .h5 / .hdf5 file")->required();
  hdf5->add_option("--dataset-projections", f.projections_dataset)->capture_default_str();
  hdf5->add_option("--dataset-flats", f.flats_dataset)->capture_default_str();
  hdf5->add_option("--dataset-darks", f.darks_dataset)->capture_default_str();
  hdf5->add_option("--dataset-theta", f.theta_dataset, "angles in degrees")->capture_default_str();
  hdf5->add_flag("--ignore-capture", f.ignore_capture,
                 "a slicestream capture is replayed with its own ScanBegin and frame placements; "
                 "this treats it as plain DXchange with the geometry flags");
  add_replay_flags(*hdf5, command);
  hdf5->callback([&command] { command.mode = DetectorMode::kReplayHdf5; });

  CLI::App* tiff = replay->add_subcommand("tiff", "TIFF stack (2D TIFFs or multi-page TIFF)");
  // More than one path here is almost always a glob the shell expanded (`proj_*.tif` unquoted):
  // taken as one value, CLI11 would list every other file name as unexpected, without a hint.
  auto projection_paths = std::make_shared<std::vector<std::string>>();
  tiff->add_option("projections", *projection_paths,
                   "directory, glob pattern (quote it) or multi-page file of projections")
      ->required();
  tiff->add_option("--darks", f.tiff_darks, "directory, glob or file of dark frames");
  tiff->add_option("--flats", f.tiff_flats, "directory, glob or file of flat frames");
  add_replay_flags(*tiff, command);
  tiff->callback([&command, projection_paths] {
    command.replay.tiff_projections = one_projection_source(*projection_paths);
    command.mode = DetectorMode::kReplayTiff;
  });
}

}  // namespace

void add_detector_cli(CLI::App& app, DetectorCommand& command) {
  app.require_subcommand(1);
  add_simulate(app, command);
  add_replay(app, command);
}

}  // namespace slicestream::detector
