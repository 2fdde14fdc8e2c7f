// Regression test for the lost end of a scan over ipc:// (bench/e2e/README.md; zeromq/libzmq#4660):
// the real Server (in-process, CPU backend, one thread) on ipc:// endpoints and the detector's
// streamer sending 2000 small frames as fast as it can, so that the server pushes back while the
// detector finishes. libzmq drops what is still in the Unix socket when the sender disconnects in
// that state; the detector therefore stays connected after ScanEnd until the server confirms, on
// its requests endpoint, that it has the whole scan. Every frame must arrive and the scan must end.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "clients/detector/phantom_scan_source.hpp"
#include "clients/detector/scan_streamer.hpp"
#include "server/server.hpp"
#include "test_scans.hpp"
#include "tests/common/temp_dir.hpp"

namespace slicestream::detector {
namespace {

using test::TempDir;

constexpr std::uint64_t kProjections = 2000;

// The reproducer's set-up: 24 x 32 frames, a window of 16, 32-pixel slices, no preview, one
// worker thread (the server is far slower than the sender: it pushes back).
ServerConfig server_config(const TempDir& dir) {
  ServerConfig config;
  config.endpoints = {"ipc://" + dir.file("data"), "ipc://" + dir.file("slices"),
                      "ipc://" + dir.file("requests")};
  config.pipeline.default_slice_size = 32;
  config.pipeline.preview_size = 0;
  config.stats_interval_s = 0;
  config.http.listen = "off";
  config.log_level = "warn";
  return config;
}

std::unique_ptr<Backend> one_thread_cpu_backend() {
  BackendOptions options;
  options.cpu.threads = 1;
  return make_backend(BackendKind::kCpu, options);
}

SimulationConfig small_frames() {
  SimulationConfig c = testing::parallel_scan({24, 32}, 16);
  c.projections = kProjections;
  c.darks = 1;
  c.flats = 1;
  c.threads = 1;
  return c;
}

// The reproducer's pair: the server on ipc:// endpoints in a fresh directory, and the small frames
// streamed as fast as its back-pressure allows.
class IpcBackPressure : public ::testing::Test {
 protected:
  IpcBackPressure()
      : server_(server_config(dir_), one_thread_cpu_backend()), source_(small_frames()) {
    server_.start();
    source_.prepare();
  }

  // With `confirm`, the detector waits for the server's confirmation on its requests endpoint.
  StreamSummary stream(std::uint64_t scan_id, bool confirm) {
    StreamOptions options;
    options.endpoint = server_.data_address();
    options.scan_id = scan_id;
    options.fps = 0;
    options.progress = false;
    if (confirm) {
      options.requests_endpoint = server_.requests_address();
      options.confirm_timeout_s = 20;
    }
    std::atomic<bool> stop{false};
    SteadyClock clock;
    std::ostringstream progress;
    return stream_scan(source_, options, clock, stop, progress);
  }

  TempDir dir_;
  Server server_;
  PhantomScanSource source_;
};

TEST_F(IpcBackPressure, TheEndOfTheScanArrivesWhenTheDetectorWaitsForTheConfirmation) {
  const StreamSummary summary = stream(4711, true);
  std::printf("sent %llu projections; blocked by back-pressure %.3f s; confirmed after %.3f s\n",
              static_cast<unsigned long long>(summary.projections), summary.blocked_seconds,
              summary.confirm_seconds);

  EXPECT_TRUE(summary.confirmed) << summary.confirmation;
  EXPECT_EQ(summary.projections, kProjections);
  // Nothing to wait for: the detector returned after the server had ended the scan.
  const MetricsSnapshot metrics = server_.metrics();
  EXPECT_EQ(metrics.projections_integrated, kProjections);
  EXPECT_EQ(metrics.frames_received, kProjections + 2);
  EXPECT_EQ(metrics.scans_ended, 1u);
  EXPECT_TRUE(metrics.discards.empty());
  server_.stop(true);
}

// The reproducer of the bug itself (not run by default: it shows libzmq's behaviour, which a fixed
// libzmq would change): the same stream without the confirmation loses its end, every time here.
// Run with --gtest_also_run_disabled_tests.
TEST_F(IpcBackPressure, DISABLED_WithoutTheConfirmationTheEndIsLost) {
  const StreamSummary summary = stream(4712, false);
  // Until the server has read everything it is going to read.
  std::uint64_t previous = ~std::uint64_t{0};
  for (int stable = 0; stable < 10;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::uint64_t now = server_.metrics().projections_integrated;
    stable = now == previous ? stable + 1 : 0;
    previous = now;
  }
  const MetricsSnapshot metrics = server_.metrics();
  std::printf("sent %llu projections, %llu integrated, scans ended %llu\n",
              static_cast<unsigned long long>(summary.projections),
              static_cast<unsigned long long>(metrics.projections_integrated),
              static_cast<unsigned long long>(metrics.scans_ended));
  EXPECT_LT(metrics.projections_integrated, kProjections);
  EXPECT_EQ(metrics.scans_ended, 0u);
}

}  // namespace
}  // namespace slicestream::detector
