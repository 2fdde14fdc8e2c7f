// Capture round trip: slicestream-detector (run_detector, as the binary runs it) streams a
// simulated noisy scan to the real server (in-process, CPU backend) that captures it
// (--capture); `replay hdf5` of the capture file then streams it again, and the server
// reconstructs the same slices: a one-shot slice from each scan's final window matches to float
// round-off. Both placements of projections are covered: by slot (parallel beam, two rotations)
// and by angle (cone beam, a rotation and a half, so the window slides).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <thread>

#include "clients/common/request_client.hpp"
#include "clients/detector/capture_replay_source.hpp"
#include "clients/detector/detector_cli.hpp"
#include "clients/detector/detector_commands.hpp"
#include "clients/detector/dxchange_file.hpp"
#include "server/server.hpp"
#include "tests/common/temp_dir.hpp"

namespace slicestream::detector {
namespace {

using test::TempDir;

ServerConfig capturing_server(const TempDir& dir) {
  ServerConfig config;
  config.endpoints = {"tcp://127.0.0.1:*", "tcp://127.0.0.1:*", "tcp://127.0.0.1:*"};
  config.http.listen = "127.0.0.1:0";  // any free port: tests run side by side
  config.pipeline.default_slice_size = 32;
  config.pipeline.preview_size = 0;
  config.stats_interval_s = 0;
  config.log_level = "warn";
  config.capture.directory = dir.file("captures");
  config.capture.every_scan = true;
  return config;
}

std::unique_ptr<Backend> cpu_backend() {
  BackendOptions options;
  options.cpu.threads = 2;
  return make_backend(BackendKind::kCpu, options);
}

int run(DetectorCommand command, const Server& server, std::uint64_t scan_id, std::string* err) {
  command.stream.data_endpoint = server.data_address();
  command.stream.requests_endpoint = server.requests_address();
  command.stream.confirm_timeout_s = 30;
  command.stream.fps = 0;
  command.stream.scan_id = scan_id;
  command.stream.quiet = true;
  std::ostringstream out, errors;
  std::atomic<bool> stop{false};
  const int status = run_detector(command, out, errors, stop);
  *err = errors.str();
  return status;
}

// Waits until the capture has finished `files` files.
void wait_files(client::RequestClient& requests, std::uint64_t files) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (requests.get_status().reply.status().capture().files() < files) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the capture file was not finished";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// An axial slice through the middle of the scan's box, from the current window.
std::vector<float> middle_slice(client::RequestClient& requests, const v1::VolumeBox& box) {
  const v1::Vec3& lo = box.min_mm();
  const v1::Vec3& hi = box.max_mm();
  const client::Orientation axial = {static_cast<float>(hi.x() - lo.x()),
                                     0,
                                     0,
                                     0,
                                     static_cast<float>(hi.y() - lo.y()),
                                     0,
                                     static_cast<float>(lo.x()),
                                     static_cast<float>(lo.y()),
                                     static_cast<float>(0.5 * (lo.z() + hi.z()))};
  const client::Response response = requests.get_slice(axial, 40, 40);
  EXPECT_TRUE(response.ok()) << response.reply.message();
  return response.values;
}

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double difference = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(a[i]) * a[i];
  }
  return std::sqrt(difference / norm);
}

void expect_replay_reproduces_slices(const DetectorCommand& simulate) {
  TempDir dir;
  Server server(capturing_server(dir), cpu_backend());
  server.start();
  client::RequestClient requests(server.requests_address(), 20000);
  std::string err;

  ASSERT_EQ(run(simulate, server, 501, &err), 0) << err;
  server.wait_idle();
  wait_files(requests, 1);
  const v1::CaptureStatus capture = requests.get_status().reply.status().capture();
  EXPECT_EQ(capture.frames_dropped(), 0u);
  const std::string file = capture.file();
  ASSERT_TRUE(std::filesystem::exists(file)) << file;

  auto recording = std::make_unique<DxchangeFile>(file);
  EXPECT_EQ(recording->count(FrameKind::kProjection), simulate.simulate.frames);
  EXPECT_EQ(recording->count(FrameKind::kDark), static_cast<std::size_t>(simulate.simulate.darks));
  const v1::VolumeBox box = CaptureReplaySource(std::move(recording), "").scan_begin().volume();
  const std::vector<float> original = middle_slice(requests, box);
  ASSERT_EQ(original.size(), 40u * 40u);

  // The replay is not captured again: SetCapture stop through the requests endpoint.
  ASSERT_TRUE(requests.set_capture(false).ok());
  DetectorCommand replay;
  replay.mode = DetectorMode::kReplayHdf5;
  replay.replay.hdf5_file = file;
  ASSERT_EQ(run(replay, server, 502, &err), 0) << err;
  server.wait_idle();
  const v1::StatusReport status = requests.get_status().reply.status();
  EXPECT_EQ(status.scan_id(), 502u);
  EXPECT_EQ(status.capture().files(), 1u);
  const std::vector<float> replayed = middle_slice(requests, box);
  ASSERT_EQ(replayed.size(), original.size());
  double norm = 0;
  for (float v : original)
    norm += double(v) * v;
  EXPECT_GT(norm, 0.0) << "the slice is empty: the comparison would prove nothing";
  EXPECT_LT(relative_difference(replayed, original), 1e-6);
  server.stop(true);
}

DetectorCommand small_simulation(const std::string& preset, std::uint64_t frames, int slots) {
  DetectorCommand command;
  command.mode = DetectorMode::kSimulate;
  command.simulate.preset = preset;
  command.simulate.rows = 24;
  command.simulate.cols = 32;
  command.simulate.frames = frames;
  command.simulate.darks = 2;
  command.simulate.flats = 3;
  command.simulate.noise = true;
  command.simulate.seed = 7;
  command.simulate.threads = 1;
  command.geometry.projections_per_rotation = slots;
  return command;
}

TEST(CaptureRoundTrip, ReplayOfAParallelBeamCaptureReproducesTheSlices) {
  expect_replay_reproduces_slices(small_simulation("highspeed", 32, 16));
}

TEST(CaptureRoundTrip, ReplayOfAConeBeamCapturePlacedByAngleReproducesTheSlices) {
  DetectorCommand command = small_simulation("flexray", 30, 20);
  command.stream.placement = "angle";
  expect_replay_reproduces_slices(command);
}

}  // namespace
}  // namespace slicestream::detector
