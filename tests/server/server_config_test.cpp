// slicestream-server's flags and config file (CLI11), and the stats log lines.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/server_options.hpp"
#include "server/stats_report.hpp"
#include "tests/common/parse_command_line.hpp"
#include "tests/common/temp_dir.hpp"

namespace slicestream {
namespace {

// Parses `args` into a fresh config; returns the CLI11 error text (empty on success).
std::string parse(std::vector<std::string> args, ServerConfig& config) {
  CLI::App app;
  add_server_options(app, config);
  const std::string error = test::parse_command_line(app, args);
  return error.empty() ? finalize_server_config(config) : error;
}

TEST(ServerOptions, FlagsFillTheConfig) {
  ServerConfig config;
  ASSERT_EQ(parse({"--data",
                   "ipc:///tmp/d",
                   "--backend",
                   "CPU",
                   "--threads",
                   "3",
                   "--mode",
                   "per-rotation",
                   "--filter",
                   "hann",
                   "--filter-cutoff",
                   "0.5",
                   "--cor-offset",
                   "-1.5",
                   "--publish-rate",
                   "20",
                   "--preview-size",
                   "64",
                   "--preview-interval",
                   "0.5",
                   "--slice-size",
                   "256",
                   "--queue-depth",
                   "8",
                   "--max-frame-bytes",
                   "2MiB",
                   "--max-slice-side",
                   "1000",
                   "--memory-limit-mb",
                   "512",
                   "--max-refine-iterations",
                   "50",
                   "--max-refine-matrix",
                   "64MiB",
                   "--residual-interval",
                   "0",
                   "--stats-interval",
                   "0",
                   "--log-level",
                   "debug"},
                  config),
            "");
  EXPECT_EQ(config.endpoints.data, "ipc:///tmp/d");
  EXPECT_EQ(config.endpoints.slices, "tcp://127.0.0.1:5571");
  EXPECT_EQ(config.backend, BackendKind::kCpu);
  EXPECT_EQ(config.backend_options.cpu.threads, 3);
  EXPECT_EQ(config.backend_options.cpu.memory_limit_bytes, 512u << 20);
  const Parameters& p = config.pipeline.parameters;
  EXPECT_EQ(p.window_mode, WindowMode::kPerRotation);
  EXPECT_EQ(p.filter.window, FilterWindow::kHann);
  EXPECT_EQ(p.filter.cutoff, 0.5f);
  EXPECT_EQ(p.rotation_axis_offset_px, -1.5);
  EXPECT_EQ(p.publish_rate_hz, 20);
  EXPECT_EQ(p.preview_interval_s, 0.5);
  EXPECT_EQ(config.pipeline.preview_size, 64);
  EXPECT_EQ(config.pipeline.default_slice_size, 256);
  EXPECT_EQ(config.pipeline.queue_depth, 8);
  EXPECT_EQ(config.limits.max_frame_bytes, 2u << 20);
  EXPECT_EQ(config.limits.max_slice_side, 1000);
  EXPECT_EQ(config.pipeline.max_slice_side, 1000) << "one flag bounds the codec and the pipeline";
  EXPECT_EQ(config.pipeline.refinement.max_iterations, 50);
  EXPECT_EQ(config.pipeline.refinement.max_matrix_bytes, 64u << 20);
  EXPECT_EQ(config.pipeline.refinement.residual_interval_s, 0) << "0 switches the checks off";
  EXPECT_EQ(config.stats_interval_s, 0);
  EXPECT_EQ(config.log_level, "debug");
}

TEST(ServerOptions, BatchSizeAndTheCudaBackendsOptions) {
  ServerConfig config;
  ASSERT_EQ(parse({"--max-projection-batch", "16", "--cuda-device", "1", "--cuda-reserve", "1GiB",
                   "--interpolation", "exact", "--cuda-graphs", "false", "--cuda-wait", "block"},
                  config),
            "");
  EXPECT_EQ(config.pipeline.max_projection_batch, 16);
  const CudaSettings& cuda = config.backend_options.cuda;
  EXPECT_EQ(cuda.device, 1);
  EXPECT_EQ(cuda.reserve_bytes, std::size_t{1} << 30);
  EXPECT_EQ(cuda.interpolation, CudaInterpolation::kExact);
  EXPECT_FALSE(cuda.use_graphs);
  EXPECT_EQ(cuda.host_wait, CudaHostWait::kBlock);
  ServerConfig half;
  ASSERT_EQ(parse({"--texels", "fp16"}, half), "");
  EXPECT_EQ(half.backend_options.cuda.texels, CudaTexels::kFloat16);
  ServerConfig mirrored;
  ASSERT_EQ(parse({"--texels", "fp16-mirrored"}, mirrored), "");
  EXPECT_EQ(mirrored.backend_options.cuda.texels, CudaTexels::kFloat16Mirrored);
  const CudaSettings defaults;
  ServerConfig untouched;
  ASSERT_EQ(parse({}, untouched), "");
  EXPECT_EQ(untouched.backend_options.cuda.interpolation, CudaInterpolation::kTexture);
  EXPECT_EQ(untouched.backend_options.cuda.texels, defaults.texels);
  EXPECT_EQ(defaults.texels, CudaTexels::kAuto);  // mirrored fp16 pairs with texture interpolation
  ServerConfig full;
  ASSERT_EQ(parse({"--texels", "fp32"}, full), "");
  EXPECT_EQ(full.backend_options.cuda.texels, CudaTexels::kFloat32);
  EXPECT_EQ(untouched.backend_options.cuda.reserve_bytes, defaults.reserve_bytes);
  EXPECT_TRUE(untouched.backend_options.cuda.use_graphs);
  EXPECT_EQ(untouched.backend_options.cuda.host_wait, CudaHostWait::kAuto);
  // The pipeline checks its settings (pipeline_config_problem) and names the one refused.
  ServerConfig bad_batch;
  EXPECT_NE(parse({"--max-projection-batch", "0"}, bad_batch).find("max_projection_batch"),
            std::string::npos);
}

TEST(ServerOptions, BadValuesAreRefusedWithTheirName) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--filter", "bogus"},
                                             {"--backend", "gpu"},
                                             {"--mode", "fast"},
                                             {"--filter-cutoff", "0"},
                                             {"--filter-cutoff", "1.5"},
                                             {"--queue-depth", "0"},
                                             {"--publish-rate", "-1"},
                                             {"--max-frame-bytes", "lots"},
                                             {"--log-level", "loud"},
                                             {"--slice-size", "9000"},
                                             {"--residual-interval", "-1"},
                                             {"--interpolation", "cubic"},
                                             {"--texels", "fp8"},
                                             {"--cuda-wait", "busy"},
                                             {"--preview-interval", "-2"},
                                             {"--cor-offset", "1e9"},
                                             {"--no-such-flag"}}) {
    ServerConfig config;
    const std::string error = parse(args, config);
    EXPECT_FALSE(error.empty()) << args[0];
    EXPECT_NE(error.find(args[0].substr(2, 5)), std::string::npos) << error;
  }
}

TEST(ServerOptions, ConfigFileWithFlagsOverriding) {
  const test::TempTextFile file("server.toml",
                                "requests = \"tcp://127.0.0.1:6000\"\n"
                                "filter = \"cosine\"\n"
                                "publish-rate = 5.0\n"
                                "max-request-bytes = \"64KiB\"\n");
  ServerConfig config;
  EXPECT_EQ(parse({"--config", file.path(), "--publish-rate", "7"}, config), "");
  EXPECT_EQ(config.endpoints.requests, "tcp://127.0.0.1:6000");
  EXPECT_EQ(config.pipeline.parameters.filter.window, FilterWindow::kCosine);
  EXPECT_EQ(config.pipeline.parameters.publish_rate_hz, 7) << "the command line wins";
  EXPECT_EQ(config.limits.max_request_bytes, 64u << 10);
}

TEST(ServerOptions, EndpointOutsideThePortRangeIsRefused) {
  // ZeroMQ bound tcp://127.0.0.1:99999 to another port: the flag is refused before any socket.
  for (const char* flag :
       {"--data", "--slices", "--requests", "--tomop-data", "--recast3d", "--recast3d-updates"}) {
    ServerConfig config;
    const std::string error = parse({flag, "tcp://127.0.0.1:99999"}, config);
    EXPECT_NE(error.find(flag), std::string::npos) << error;
    EXPECT_NE(error.find("outside 1..65535"), std::string::npos) << error;
  }
  ServerConfig in_file;
  const test::TempTextFile file("server.conf", "data = \"tcp://127.0.0.1:99999\"\n");
  EXPECT_NE(parse({"--config", file.path()}, in_file).find("outside 1..65535"), std::string::npos)
      << "a config file's endpoint is checked as the flag is";
  ServerConfig wildcard;
  EXPECT_EQ(parse({"--data", "tcp://*:7000", "--requests", "tcp://127.0.0.1:*"}, wildcard), "")
      << "the server binds wildcards";
  ServerConfig viewer;
  EXPECT_NE(parse({"--recast3d", "tcp://*:5555"}, viewer).find("--recast3d"), std::string::npos)
      << "a viewer's address is connected to: no wildcard";
  ServerConfig http;
  EXPECT_NE(parse({"--http", "127.0.0.1:99999"}, http).find("not a port number"), std::string::npos)
      << "--http is checked when parsed, not when the server starts";
}

TEST(ServerOptions, ListenSetsAllThreeEndpoints) {
  ServerConfig config;
  ASSERT_EQ(parse({"--listen", "0.0.0.0:6000", "--slices", "ipc:///tmp/s"}, config), "");
  EXPECT_EQ(config.endpoints.data, "tcp://0.0.0.0:6000");
  EXPECT_EQ(config.endpoints.slices, "ipc:///tmp/s") << "an explicit endpoint wins";
  EXPECT_EQ(config.endpoints.requests, "tcp://0.0.0.0:6002");
}

TEST(ServerOptions, UnknownConfigKeyNamesTheNearestValidOne) {
  const test::TempTextFile typo("server.conf", "fliter = \"hann\"\n");
  ServerConfig config;
  const std::string error = parse({"--config", typo.path()}, config);
  EXPECT_NE(error.find("unknown key 'fliter' (did you mean 'filter'?)"), std::string::npos)
      << error;
  const test::TempTextFile section("server.conf", "[reconstruction]\nfilter = \"hann\"\n");
  EXPECT_NE(parse({"--config", section.path()}, config).find("unknown section [reconstruction]"),
            std::string::npos);
  const test::TempTextFile ini("server.conf", "preview-sise=64\n");
  EXPECT_NE(parse({"--config", ini.path()}, config).find("did you mean 'preview-size'?"),
            std::string::npos);
}

TEST(ServerOptions, RangeErrorsAreReadable) {
  ServerConfig config;
  const std::string error = parse({"--data-hwm", "0"}, config);
  EXPECT_NE(error.find("must be > 0 (got 0)"), std::string::npos) << error;
  EXPECT_EQ(error.find("17976931348"), std::string::npos) << error;
}

TEST(ServerOptions, ExampleConfigFileHoldsTheDefaults) {
  ServerConfig from_file;
  ASSERT_EQ(parse({"--config",
                   std::string(SLICESTREAM_SOURCE_DIR) + "/server/slicestream-server.example.toml"},
                  from_file),
            "");
  ServerConfig defaults;
  ASSERT_EQ(parse({}, defaults), "");
  EXPECT_EQ(from_file.endpoints.data, defaults.endpoints.data);
  EXPECT_EQ(from_file.backend, defaults.backend);
  EXPECT_EQ(from_file.pipeline.parameters.filter.window,
            defaults.pipeline.parameters.filter.window);
  EXPECT_EQ(from_file.pipeline.queue_depth, defaults.pipeline.queue_depth);
  EXPECT_EQ(from_file.pipeline.preview_size, defaults.pipeline.preview_size);
  EXPECT_EQ(from_file.limits.max_frame_bytes, defaults.limits.max_frame_bytes);
  EXPECT_EQ(from_file.limits.max_header_bytes, defaults.limits.max_header_bytes);
  EXPECT_EQ(from_file.limits.max_request_bytes, defaults.limits.max_request_bytes);
  EXPECT_EQ(from_file.limits.max_projections_per_rotation,
            defaults.limits.max_projections_per_rotation);
  EXPECT_EQ(from_file.data_hwm, defaults.data_hwm);
  EXPECT_EQ(from_file.stats_interval_s, defaults.stats_interval_s);
  EXPECT_EQ(from_file.pipeline.refinement.max_slices, defaults.pipeline.refinement.max_slices);
  EXPECT_EQ(from_file.pipeline.refinement.max_iterations,
            defaults.pipeline.refinement.max_iterations);
  EXPECT_EQ(from_file.pipeline.refinement.max_matrix_bytes,
            defaults.pipeline.refinement.max_matrix_bytes);
  EXPECT_EQ(from_file.pipeline.refinement.residual_interval_s,
            defaults.pipeline.refinement.residual_interval_s);
  EXPECT_EQ(from_file.pipeline.max_projection_batch, defaults.pipeline.max_projection_batch);
  EXPECT_EQ(from_file.pipeline.parameters.window_mode, defaults.pipeline.parameters.window_mode);
  EXPECT_EQ(from_file.backend_options.cuda.reserve_bytes,
            defaults.backend_options.cuda.reserve_bytes);
  EXPECT_EQ(from_file.backend_options.cuda.interpolation,
            defaults.backend_options.cuda.interpolation);
  EXPECT_EQ(from_file.backend_options.cuda.use_graphs, defaults.backend_options.cuda.use_graphs);
}

TEST(StatsReport, ActivityStagesDiscardsAndIdle) {
  MetricsSnapshot before;
  before.frames_received = 100;
  before.discards = {{"bad_parts", 1}};
  MetricsSnapshot now = before;
  now.frames_received = 183;
  now.projections_integrated = 180;
  now.discards = {{"bad_parts", 3}, {"shape_mismatch", 1}};
  now.frame_to_slice_us = {180, 12000, 31000, 40000};
  StageMetrics stage;
  stage.name = "filter";
  stage.rate_per_s = 83;
  stage.busy_fraction = 0.25;
  stage.queue_depth = 2;
  stage.queue_capacity = 64;
  now.stages = {stage};
  now.residual_checks_run = 7;
  now.slices_published = 40;
  now.publications_coalesced = 9;
  now.slice_residuals = {{0, 0.0213}, {4, 0.5}};
  const std::vector<std::string> lines = format_stats(now, &before, {{"requests", 4}});
  std::string all;
  for (const std::string& line : lines)
    all += line + "\n";
  EXPECT_NE(all.find("frames 183 (+83)"), std::string::npos) << all;
  EXPECT_NE(all.find("p50 12.00 ms p99 31.00 ms"), std::string::npos) << all;
  EXPECT_NE(all.find("filter"), std::string::npos) << all;
  EXPECT_NE(all.find("83.0/s busy  25.0%"), std::string::npos) << all;
  EXPECT_NE(all.find("queue 2/64"), std::string::npos) << all;
  EXPECT_NE(all.find("bad_parts=3 (+2)"), std::string::npos) << all;
  EXPECT_NE(all.find("shape_mismatch=1 (+1)"), std::string::npos) << all;
  EXPECT_NE(all.find("requests=4"), std::string::npos) << all;
  EXPECT_NE(all.find("(7 checks"), std::string::npos) << all;
  EXPECT_NE(all.find("slices published 40 (+40, 9 coalesced)"), std::string::npos) << all;
  EXPECT_NE(all.find("slice 0 0.0213 slice 4 0.5"), std::string::npos) << all;

  const std::vector<std::string> idle = format_stats(now, &now, {});
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_NE(idle[0].find("idle"), std::string::npos) << idle[0];
}

// The idle line comes once when the server falls idle, then as a slow heartbeat, and the full
// report returns as soon as something happens.
TEST(StatsReport, TheIdleLineIsNotRepeatedEveryReport) {
  StatsLog log(/*idle_heartbeat_s=*/600);
  MetricsSnapshot now;
  now.frames_received = 10;
  now.uptime_s = 10;
  EXPECT_GT(log.report(now, {}).size(), 1u) << "the first report is a full one";
  now.uptime_s = 20;
  const std::vector<std::string> first_idle = log.report(now, {});
  ASSERT_EQ(first_idle.size(), 1u);
  EXPECT_NE(first_idle[0].find("idle"), std::string::npos) << first_idle[0];
  EXPECT_NE(first_idle[0].find("logged again in 600 s"), std::string::npos) << first_idle[0];
  for (double t = 30; t < 620; t += 10) {
    now.uptime_s = t;
    EXPECT_TRUE(log.report(now, {}).empty()) << "idle line repeated at " << t << " s";
  }
  now.uptime_s = 620;
  EXPECT_EQ(log.report(now, {}).size(), 1u) << "the heartbeat after 600 s";
  now.uptime_s = 630;
  EXPECT_TRUE(log.report(now, {}).empty());
  now.uptime_s = 640;
  now.frames_received = 11;
  EXPECT_GT(log.report(now, {}).size(), 1u) << "activity gives the full report at once";
  now.uptime_s = 650;
  EXPECT_EQ(log.report(now, {}).size(), 1u) << "idle again: one line at once";
}

}  // namespace
}  // namespace slicestream
