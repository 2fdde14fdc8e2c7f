#include "clients/detector/detector_cli.hpp"

#include <gtest/gtest.h>

#include "clients/detector/detector_commands.hpp"

namespace slicestream::detector {
namespace {

// Parses a command line (without the program name); returns CLI11's message on a parse error.
struct Parsed {
  DetectorCommand command;
  std::string parse_error;
};

Parsed parse(const std::string& line) {
  Parsed parsed;
  CLI::App app{"test", "slicestream-detector"};
  add_detector_cli(app, parsed.command);
  try {
    app.parse(line, false);
  } catch (const CLI::ParseError& error) {
    parsed.parse_error = error.what();
    if (parsed.parse_error.empty()) parsed.parse_error = error.get_name();
  }
  return parsed;
}

// The message of the configuration error the command line leads to ("" if none).
std::string config_error(const std::string& line) {
  const Parsed parsed = parse(line);
  EXPECT_EQ(parsed.parse_error, "") << line;
  try {
    if (parsed.command.mode == DetectorMode::kSimulate) {
      std::vector<std::string> warnings;
      PhantomScanSource source(make_simulation_config(parsed.command, warnings));
    } else {
      make_replay_config(parsed.command);
    }
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(DetectorCli, FlexrayPresetIsALabConeBeamScan) {
  const Parsed parsed = parse("simulate --preset flexray --rotations 3");
  ASSERT_EQ(parsed.parse_error, "");
  ASSERT_EQ(parsed.command.mode, DetectorMode::kSimulate);
  std::vector<std::string> warnings;
  const SimulationConfig c = make_simulation_config(parsed.command, warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(c.geometry.beam, BeamKind::kCone);
  EXPECT_EQ(c.geometry.detector, (DetectorShape{400, 600}));
  EXPECT_DOUBLE_EQ(c.geometry.source_origin_mm, 190);
  EXPECT_DOUBLE_EQ(c.geometry.origin_detector_mm, 150);
  EXPECT_EQ(c.geometry.slot_angles_rad.size(), 150u);  // 75 per 180 degrees, full turn
  EXPECT_EQ(c.rotations, 3);
  EXPECT_EQ(c.projections, 0u);  // whole rotations
  EXPECT_EQ(c.darks, 10);
  EXPECT_EQ(c.flats, 10);
  EXPECT_EQ(c.detector.pixel_type, PixelType::kUint16);
  const StreamOptions options = make_stream_options(parsed.command, 83.0);
  EXPECT_DOUBLE_EQ(options.fps, 83.0);
  EXPECT_EQ(options.endpoint, "tcp://127.0.0.1:5570");
  EXPECT_EQ(options.requests_endpoint, "tcp://127.0.0.1:5572");  // the server's default
  EXPECT_DOUBLE_EQ(options.confirm_timeout_s, 30);
  EXPECT_NE(options.scan_id, 0u);
}

TEST(DetectorCli, TheScanEndIsConfirmedUnlessTurnedOff) {
  Parsed parsed =
      parse("simulate --data ipc:///tmp/d --requests ipc:///tmp/r --confirm-timeout 2.5");
  ASSERT_EQ(parsed.parse_error, "");
  StreamOptions options = make_stream_options(parsed.command, 0);
  EXPECT_EQ(options.requests_endpoint, "ipc:///tmp/r");
  EXPECT_DOUBLE_EQ(options.confirm_timeout_s, 2.5);
  parsed = parse("replay tiff proj.tif --no-confirm");
  ASSERT_EQ(parsed.parse_error, "");
  options = make_stream_options(parsed.command, 0);
  EXPECT_EQ(options.requests_endpoint, "");  // no confirmation
  // A wrapper that always passes --requests (bench/e2e) can still turn the confirmation off.
  parsed = parse("simulate --requests ipc:///tmp/r --no-confirm");
  ASSERT_EQ(parsed.parse_error, "");
  EXPECT_EQ(make_stream_options(parsed.command, 0).requests_endpoint, "");
  EXPECT_NE(parse("simulate --confirm-timeout 0").parse_error, "");
}

TEST(DetectorCli, SynchrotronPresetsAreParallelHalfTurns) {
  Parsed parsed = parse("simulate --preset highspeed");
  std::vector<std::string> warnings;
  SimulationConfig c = make_simulation_config(parsed.command, warnings);
  EXPECT_EQ(c.geometry.beam, BeamKind::kParallel);
  EXPECT_EQ(c.geometry.detector, (DetectorShape{1024, 1024}));
  EXPECT_EQ(c.geometry.slot_angles_rad.size(), 128u);
  parsed = parse("simulate --preset tomobank --arc 360 --rows 32 --cols 48 --fps 0 --scan-id 7");
  c = make_simulation_config(parsed.command, warnings);
  EXPECT_EQ(c.geometry.detector, (DetectorShape{32, 48}));
  EXPECT_EQ(c.geometry.slot_angles_rad.size(), 600u);
  const StreamOptions options = make_stream_options(parsed.command, 1300);
  EXPECT_DOUBLE_EQ(options.fps, 0);
  EXPECT_EQ(make_simulation_config(parse("simulate --frames 250").command, warnings).projections,
            250u);
  EXPECT_EQ(options.scan_id, 7u);
}

TEST(DetectorCli, FlagsOverrideThePreset) {
  const Parsed parsed = parse(
      "simulate --preset highspeed --geometry cone --sod 500 --odd 100 --pixel-size 0.1,0.2 "
      "--projections-per-rotation 90 --already-linear --noise --seed 5 --dynamic "
      "--placement angle --data ipc:///tmp/x --volume -1,-2,-3,1,2,3");
  ASSERT_EQ(parsed.parse_error, "");
  std::vector<std::string> warnings;
  const SimulationConfig c = make_simulation_config(parsed.command, warnings);
  EXPECT_EQ(c.geometry.beam, BeamKind::kCone);
  EXPECT_DOUBLE_EQ(c.geometry.pixel_width_mm, 0.1);
  EXPECT_DOUBLE_EQ(c.geometry.pixel_height_mm, 0.2);
  EXPECT_EQ(c.geometry.slot_angles_rad.size(), 90u);
  EXPECT_TRUE(c.detector.already_linear);
  EXPECT_EQ(c.detector.pixel_type, PixelType::kFloat32);
  EXPECT_EQ(c.darks, 0);
  EXPECT_EQ(c.flats, 0);
  EXPECT_TRUE(c.detector.poisson_noise);
  EXPECT_EQ(c.detector.seed, 5u);
  EXPECT_TRUE(c.dynamic);
  EXPECT_EQ(c.placement, Placement::kAngle);
  ASSERT_TRUE(c.geometry.volume.has_value());
  EXPECT_DOUBLE_EQ(c.geometry.volume->max_mm.z, 3);
  EXPECT_EQ(make_stream_options(parsed.command, 1).endpoint, "ipc:///tmp/x");
}

TEST(DetectorCli, ParseErrorsNameTheFlag) {
  EXPECT_NE(parse("simulate --preset bogus").parse_error.find("--preset"), std::string::npos);
  EXPECT_NE(parse("simulate --fps -1").parse_error.find("--fps"), std::string::npos);
  EXPECT_NE(parse("simulate --arc 90").parse_error.find("--arc"), std::string::npos);
  EXPECT_NE(parse("simulate --rotations 0").parse_error.find("--rotations"), std::string::npos);
  EXPECT_NE(parse("simulate --frames 0").parse_error.find("--frames"), std::string::npos);
  EXPECT_NE(parse("simulate --frames 10 --rotations 2").parse_error.find("excludes"),
            std::string::npos);
  EXPECT_NE(parse("simulate --pixel-type int8").parse_error.find("--pixel-type"),
            std::string::npos);
  EXPECT_NE(parse("simulate --volume 1,2,3").parse_error, "");
  EXPECT_NE(parse("simulate --bogus").parse_error.find("--bogus"), std::string::npos);
  EXPECT_NE(parse("replay").parse_error, "");
  EXPECT_NE(parse("replay hdf5").parse_error.find("file"), std::string::npos);
  EXPECT_NE(parse("replay tiff 'x/*.tif' --placement sideways").parse_error.find("--placement"),
            std::string::npos);
  EXPECT_NE(parse("").parse_error, "");
}

TEST(DetectorCli, InconsistentFlagsAreRejectedWithAReason) {
  EXPECT_NE(config_error("simulate --preset highspeed --geometry cone").find("--sod"),
            std::string::npos);
  EXPECT_NE(config_error("simulate --arc 180").find("--arc 360"), std::string::npos);
  EXPECT_NE(config_error("simulate --already-linear --darks 5").find("--darks"), std::string::npos);
  EXPECT_NE(config_error("simulate --already-linear --pixel-type uint16").find("--pixel-type"),
            std::string::npos);
  EXPECT_NE(config_error("simulate --geometry parallel --sod 100").find("cone beam only"),
            std::string::npos);
  EXPECT_NE(config_error("simulate --volume 0,0,0,-1,1,1").find("xmin < xmax"), std::string::npos);
  EXPECT_NE(config_error("simulate --preset highspeed --rows 8 --cols 8 --detector-offset 1 "
                         "--placement angle")
                .find("circular"),
            std::string::npos);
  EXPECT_NE(config_error("replay tiff x.tif --geometry cone").find("--sod"), std::string::npos);
  EXPECT_NE(config_error("replay hdf5 x.h5 --geometry cone --sod 10 --odd 10 --arc 180")
                .find("--arc 360"),
            std::string::npos);
  EXPECT_EQ(config_error("simulate --rows 8 --cols 8"), "");
}

TEST(DetectorCli, SaturatingCountsAreAWarning) {
  const Parsed parsed = parse("simulate --flat-intensity 70000");
  std::vector<std::string> warnings;
  make_simulation_config(parsed.command, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("saturate"), std::string::npos);
  warnings.clear();
  make_simulation_config(parse("simulate --flat-intensity 70000 --pixel-type uint32").command,
                         warnings);
  EXPECT_TRUE(warnings.empty());
}

TEST(DetectorCli, ReplayFlagsReachTheConfiguration) {
  const Parsed parsed = parse(
      "replay hdf5 scan.h5 --dataset-theta /exchange/angles --flip-rows --repeat 2 "
      "--projections-per-rotation 100 --geometry cone --sod 300 --odd 200 --pixel-size 0.05 "
      "--detector-offset 1.5,-2 --fps 50");
  ASSERT_EQ(parsed.parse_error, "");
  EXPECT_EQ(parsed.command.mode, DetectorMode::kReplayHdf5);
  EXPECT_EQ(parsed.command.replay.hdf5_file, "scan.h5");
  EXPECT_EQ(parsed.command.replay.theta_dataset, "/exchange/angles");
  const ReplayConfig c = make_replay_config(parsed.command);
  EXPECT_TRUE(c.flip_rows);
  EXPECT_EQ(c.repeat, 2);
  EXPECT_EQ(c.projections_per_rotation, 100);
  EXPECT_EQ(c.geometry.beam, BeamKind::kCone);
  EXPECT_DOUBLE_EQ(c.geometry.detector_offset_u_mm, 1.5);
  EXPECT_DOUBLE_EQ(c.geometry.detector_offset_v_mm, -2);
  EXPECT_DOUBLE_EQ(c.arc_deg, 360);
  EXPECT_DOUBLE_EQ(make_stream_options(parsed.command, 0).fps, 50);

  const Parsed tiff = parse("replay tiff proj --darks 'd*.tif' --flats f.tif");
  ASSERT_EQ(tiff.parse_error, "");
  EXPECT_EQ(tiff.command.mode, DetectorMode::kReplayTiff);
  EXPECT_EQ(tiff.command.replay.tiff_projections, "proj");
  EXPECT_EQ(tiff.command.replay.tiff_darks, "d*.tif");
  EXPECT_EQ(tiff.command.replay.tiff_flats, "f.tif");
  EXPECT_DOUBLE_EQ(make_stream_options(tiff.command, 0).fps, 0);
}

// `replay tiff proj_*.tif` unquoted: the shell hands over every file; the error says so once
// instead of listing the file names as unexpected arguments.
TEST(DetectorCli, AnUnquotedGlobForReplayTiffGetsAHint) {
  std::string line = "replay tiff";
  for (int i = 0; i < 180; ++i)
    line += " scan/proj_" + std::to_string(i) + ".tif";
  const std::string error = parse(line).parse_error;
  EXPECT_NE(error.find("got 180 paths (scan/proj_0.tif ... scan/proj_179.tif)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("Quote the pattern"), std::string::npos) << error;
  EXPECT_EQ(error.find("proj_57.tif"), std::string::npos) << "file names listed: " << error;
}

}  // namespace
}  // namespace slicestream::detector

namespace slicestream::detector {
namespace {

// The FleX-ray preset's geometry at a tenth of the resolution (same physical detector): the
// phantom fills most of the detector at every angle of the turn but never reaches its border,
// so no projection is truncated.
TEST(DetectorCli, FlexrayPhantomFillsTheDetectorWithoutTruncation) {
  const Parsed parsed = parse("simulate --rows 40 --cols 60 --pixel-size 3 --already-linear");
  std::vector<std::string> warnings;
  PhantomScanSource source(make_simulation_config(parsed.command, warnings));
  source.prepare();
  const DetectorShape shape = source.geometry().detector();
  int widest = 0;
  int tallest = 0;
  for (std::uint64_t j = 0; j < source.sequence().projections; ++j) {
    const OutgoingFrame frame = source.render(j);
    int first_col = shape.cols, last_col = -1, first_row = shape.rows, last_row = -1;
    for (int r = 0; r < shape.rows; ++r) {
      for (int c = 0; c < shape.cols; ++c) {
        if (load_pixel(PixelType::kFloat32, frame.pixels->bytes.data(),
                       static_cast<std::size_t>(r * shape.cols + c)) > 0) {
          first_col = std::min(first_col, c);
          last_col = std::max(last_col, c);
          first_row = std::min(first_row, r);
          last_row = std::max(last_row, r);
        }
      }
    }
    ASSERT_GT(first_col, 0) << "projection " << j;
    ASSERT_LT(last_col, shape.cols - 1) << "projection " << j;
    ASSERT_GT(first_row, 0) << "projection " << j;
    ASSERT_LT(last_row, shape.rows - 1) << "projection " << j;
    widest = std::max(widest, last_col - first_col + 1);
    tallest = std::max(tallest, last_row - first_row + 1);
  }
  RecordProperty("widest_cols", widest);
  RecordProperty("tallest_rows", tallest);
  EXPECT_GE(widest, 0.7 * shape.cols);
  EXPECT_GE(tallest, 0.7 * shape.rows);
}

}  // namespace
}  // namespace slicestream::detector
