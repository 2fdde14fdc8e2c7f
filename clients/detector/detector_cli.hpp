// slicestream-detector's command line: `simulate`, `replay hdf5 FILE`, `replay tiff PATTERN`.
// Parsing (CLI11) only fills these plain structs; detector_commands.hpp turns them into
// configurations and rejects inconsistent combinations with clear messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace slicestream::detector {

enum class DetectorMode { kNone, kSimulate, kReplayHdf5, kReplayTiff };

struct StreamFlags {
  std::string data_endpoint = "tcp://127.0.0.1:5570";
  std::string requests_endpoint = "tcp://127.0.0.1:5572";  // confirms the scan's end
  bool no_confirm = false;
  double confirm_timeout_s = 30;
  double fps = -1;            // < 0: the preset's frame rate (simulate) or 0 (replay)
  std::uint64_t scan_id = 0;  // 0: derived from the wall clock (unique per run)
  std::string placement = "position";
  int send_hwm = 0;
  bool quiet = false;
  std::string description;
  std::string server_key_file;  // CURVE: the server's public key
  std::string client_key_file;  // CURVE: this detector's secret key
};

struct GeometryFlags {
  std::string beam;  // "parallel" | "cone" | "" (preset's, or parallel for replays)
  double source_origin_mm = -1;
  double origin_detector_mm = -1;
  std::vector<double> pixel_size_mm;       // 1 value (square) or width,height
  std::vector<double> detector_offset_mm;  // u or u,v
  std::vector<double> volume_mm;           // xmin,ymin,zmin,xmax,ymax,zmax
  int projections_per_rotation = 0;        // 0: default
  int arc_deg = 0;                         // 180 | 360 | 0 (cone 360, parallel 180)
  std::string vectors_file;
};

struct SimulateFlags {
  std::string preset = "flexray";
  int rows = 0;  // 0: the preset's
  int cols = 0;
  int rotations = 1;
  std::uint64_t frames = 0;  // projections to stream; 0: rotations x projections per rotation
  int darks = -1;            // -1: 10, or 0 with --already-linear
  int flats = -1;
  double flat_intensity = 30000;
  double dark_level = 100;
  bool noise = false;
  std::uint64_t seed = 1;
  std::string pixel_type;  // "" : uint16, or float32 with --already-linear
  bool already_linear = false;
  int supersample = 1;
  bool dynamic = false;
  double attenuation_per_mm = 0;
  int threads = 0;  // 0: all cores
  double cache_limit_mb = 8192;
};

struct ReplayFlags {
  std::string hdf5_file;
  std::string projections_dataset = "/exchange/data";
  std::string flats_dataset = "/exchange/data_white";
  std::string darks_dataset = "/exchange/data_dark";
  std::string theta_dataset = "/exchange/theta";
  std::string tiff_projections;
  std::string tiff_darks;
  std::string tiff_flats;
  std::string angles_file;
  int repeat = 1;
  bool flip_rows = false;
  bool already_linear = false;
  bool ignore_capture = false;  // replay a slicestream capture as plain DXchange, with the flags
};

struct DetectorCommand {
  DetectorMode mode = DetectorMode::kNone;
  StreamFlags stream;
  GeometryFlags geometry;
  SimulateFlags simulate;
  ReplayFlags replay;
};

// Declares every subcommand and flag on `app`, bound to `command`.
void add_detector_cli(CLI::App& app, DetectorCommand& command);

}  // namespace slicestream::detector
