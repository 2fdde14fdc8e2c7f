#include "clients/detector/scan_streamer.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>
#include <zmq.hpp>

#include "clients/detector/detector_commands.hpp"
#include "clients/detector/phantom_scan_source.hpp"
#include "test_scans.hpp"
#include "tests/clients/common/fake_status_server.hpp"
#include "tests/common/temp_dir.hpp"

namespace slicestream::detector {
namespace {

using test::TempDir;

constexpr double kPi = 3.14159265358979323846;

SimulationConfig tiny_scan() {
  SimulationConfig c = testing::parallel_scan({6, 10}, 5);
  c.rotations = 2;
  c.darks = 2;
  c.flats = 3;
  c.threads = 2;
  c.detector.poisson_noise = true;  // rendered on the fly by the workers
  return c;
}

struct Received {
  v1::DataHeader header;
  std::string payload;
};

// A server stand-in: a PULL socket that collects messages until ScanEnd.
class DataSink {
 public:
  explicit DataSink(const std::string& endpoint) : socket_(context_, zmq::socket_type::pull) {
    socket_.set(zmq::sockopt::rcvtimeo, 10000);
    socket_.bind(endpoint);
  }

  // Receives until ScanEnd; calls `on_frame(projections so far)` after each projection.
  std::vector<Received> receive_scan(const std::function<void(int)>& on_frame = {}) {
    std::vector<Received> messages;
    int projections = 0;
    while (true) {
      zmq::message_t part;
      if (!socket_.recv(part)) {
        ADD_FAILURE() << "timed out waiting for the detector";
        return messages;
      }
      Received message;
      EXPECT_TRUE(message.header.ParseFromArray(part.data(), static_cast<int>(part.size())));
      if (part.more()) {
        zmq::message_t payload;
        EXPECT_TRUE(socket_.recv(payload));
        message.payload.assign(static_cast<const char*>(payload.data()), payload.size());
        EXPECT_FALSE(payload.more());
      }
      const bool end = message.header.has_scan_end();
      if (message.header.has_frame() &&
          message.header.frame().kind() == v1::FRAME_KIND_PROJECTION) {
        ++projections;
      }
      messages.push_back(std::move(message));
      if (on_frame && messages.back().header.has_frame()) on_frame(projections);
      if (end) return messages;
    }
  }

 private:
  zmq::context_t context_;
  zmq::socket_t socket_;
};

TEST(ScanStreamer, SendsScanBeginEveryFrameAndScanEnd) {
  TempDir dir;
  const std::string endpoint = "ipc://" + dir.file("data");
  DataSink sink(endpoint);
  PhantomScanSource source(tiny_scan());
  source.prepare();
  StreamOptions options;
  options.endpoint = endpoint;
  options.scan_id = 4242;
  options.progress = false;
  std::atomic<bool> stop{false};
  SteadyClock clock;
  std::ostringstream progress;
  StreamSummary summary;
  std::thread sender([&] { summary = stream_scan(source, options, clock, stop, progress); });
  const std::vector<Received> messages = sink.receive_scan();
  sender.join();

  const FrameSequence seq = source.sequence();
  ASSERT_EQ(messages.size(), seq.total() + 2);
  ASSERT_TRUE(messages.front().header.has_scan_begin());
  const v1::ScanBegin& sb = messages.front().header.scan_begin();
  EXPECT_EQ(sb.scan_id(), 4242u);
  EXPECT_EQ(sb.dark_count(), 2u);
  EXPECT_EQ(sb.projections_per_rotation(), 5u);
  EXPECT_TRUE(messages.front().payload.empty());
  for (std::uint64_t k = 0; k < seq.total(); ++k) {
    const Received& m = messages[k + 1];
    ASSERT_TRUE(m.header.has_frame()) << k;
    EXPECT_EQ(m.header.protocol_version(), 1u);
    const v1::Frame& f = m.header.frame();
    EXPECT_EQ(f.scan_id(), 4242u);
    EXPECT_EQ(f.rows(), 6u);
    EXPECT_EQ(f.cols(), 10u);
    EXPECT_EQ(f.pixel_type(), v1::PIXEL_TYPE_UINT16);
    const OutgoingFrame expected = source.render(k);  // noise is reproducible per frame
    EXPECT_EQ(f.kind(), to_wire(expected.kind));
    EXPECT_EQ(f.index(), expected.index);
    if (expected.kind == FrameKind::kProjection) {
      ASSERT_EQ(f.placement_case(), v1::Frame::kPosition);
      EXPECT_EQ(f.position(), expected.position);
    } else {
      EXPECT_EQ(f.placement_case(), v1::Frame::PLACEMENT_NOT_SET);
    }
    ASSERT_EQ(m.payload.size(), expected.pixels->bytes.size());
    EXPECT_EQ(0, std::memcmp(m.payload.data(), expected.pixels->bytes.data(), m.payload.size()));
  }
  ASSERT_TRUE(messages.back().header.has_scan_end());
  EXPECT_EQ(messages.back().header.scan_end().scan_id(), 4242u);
  EXPECT_EQ(messages.back().header.scan_end().frames_sent(), 10u);
  EXPECT_EQ(summary.projections, 10u);
  EXPECT_EQ(summary.darks, 2u);
  EXPECT_EQ(summary.flats, 3u);
  EXPECT_EQ(summary.bytes, 15u * 6 * 10 * 2);
  EXPECT_FALSE(summary.interrupted);
  EXPECT_TRUE(summary.scan_end_sent);
  EXPECT_NE(format_summary(summary).find("frames_sent=10"), std::string::npos);
}

TEST(ScanStreamer, TimestampsFollowTheFrameSchedule) {
  TempDir dir;
  const std::string endpoint = "ipc://" + dir.file("data");
  DataSink sink(endpoint);
  SimulationConfig config = tiny_scan();
  config.detector.poisson_noise = false;
  config.detector.already_linear = true;
  config.darks = config.flats = 0;
  config.placement = Placement::kAngle;
  config.angle_step_rad = kPi / 5;
  PhantomScanSource source(config);
  source.prepare();
  StreamOptions options;
  options.endpoint = endpoint;
  options.fps = 2000;
  options.progress = false;
  std::atomic<bool> stop{false};
  SteadyClock clock;
  std::ostringstream progress;
  std::thread sender([&] { stream_scan(source, options, clock, stop, progress); });
  const std::vector<Received> messages = sink.receive_scan();
  sender.join();
  ASSERT_EQ(messages.size(), 12u);
  // Timestamps are the due times of the frames: exactly 0.5 ms apart, however the send went.
  const std::uint64_t first = messages[1].header.frame().timestamp_ns();
  for (std::size_t k = 0; k < 10; ++k) {
    const v1::Frame& f = messages[k + 1].header.frame();
    EXPECT_EQ(f.timestamp_ns() - first, 500000u * k);
    ASSERT_EQ(f.placement_case(), v1::Frame::kAngleRad);
    EXPECT_NEAR(f.angle_rad(), kPi * static_cast<double>(k) / 5, 1e-12);
    EXPECT_EQ(f.pixel_type(), v1::PIXEL_TYPE_FLOAT32);
  }
}

TEST(ScanStreamer, StopEndsTheScanWithAnHonestFrameCount) {
  TempDir dir;
  const std::string endpoint = "ipc://" + dir.file("data");
  DataSink sink(endpoint);
  SimulationConfig config = tiny_scan();
  config.rotations = 100;
  PhantomScanSource source(config);
  source.prepare();
  StreamOptions options;
  options.endpoint = endpoint;
  options.fps = 500;
  options.progress = true;  // exercises the reporter thread
  std::atomic<bool> stop{false};
  SteadyClock clock;
  std::ostringstream progress;
  StreamSummary summary;
  std::thread sender([&] { summary = stream_scan(source, options, clock, stop, progress); });
  const std::vector<Received> messages = sink.receive_scan([&](int projections) {
    if (projections == 7) stop = true;
  });
  sender.join();
  ASSERT_TRUE(messages.back().header.has_scan_end());
  std::uint64_t projections = 0;
  for (const Received& m : messages) {
    projections += m.header.has_frame() && m.header.frame().kind() == v1::FRAME_KIND_PROJECTION;
  }
  EXPECT_GE(projections, 7u);
  EXPECT_LT(projections, 500u);
  EXPECT_EQ(messages.back().header.scan_end().frames_sent(), projections);
  EXPECT_EQ(summary.projections, projections);
  EXPECT_TRUE(summary.interrupted);
  EXPECT_TRUE(summary.scan_end_sent);
  EXPECT_NE(progress.str().find("stopping: sending ScanEnd"), std::string::npos);
  EXPECT_NE(progress.str().find("frames"), std::string::npos);
}

// The message of the error stream_scan must throw.
std::string stream_error(FrameSource& source, const StreamOptions& options) {
  std::atomic<bool> stop{false};
  SteadyClock clock;
  std::ostringstream progress;
  try {
    stream_scan(source, options, clock, stop, progress);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

TEST(ScanStreamer, UnusableEndpointIsAClearError) {
  PhantomScanSource source(tiny_scan());
  StreamOptions options;
  options.endpoint = "not-an-endpoint";
  options.progress = false;
  EXPECT_NE(stream_error(source, options).find("not-an-endpoint"), std::string::npos);
}

TEST(ScanStreamer, ARequestsEndpointThatDoesNotAnswerFailsBeforeAnythingIsSent) {
  TempDir dir;
  zmq::context_t context(1);
  zmq::socket_t data(context, zmq::socket_type::pull);
  data.set(zmq::sockopt::rcvtimeo, 300);
  data.bind("ipc://" + dir.file("data"));
  PhantomScanSource source(tiny_scan());
  source.prepare();
  StreamOptions options;
  options.endpoint = "ipc://" + dir.file("data");
  options.requests_endpoint = "ipc://" + dir.file("nobody");
  options.confirm_timeout_s = 0.2;
  options.progress = false;
  const std::string message = stream_error(source, options);
  EXPECT_NE(message.find("requests endpoint ipc://" + dir.file("nobody") + " does not answer"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("nothing was sent"), std::string::npos) << message;
  EXPECT_NE(message.find("--no-confirm"), std::string::npos) << message;
  zmq::message_t part;
  EXPECT_FALSE(data.recv(part)) << "the detector sent data although it cannot confirm the scan";
}

// --no-confirm with no server: ZeroMQ would queue the frames for nobody and the detector would
// report "sent 30 frames"; it fails before sending instead.
TEST(ScanStreamer, NoServerOnTheDataEndpointFailsBeforeAnythingIsSent) {
  TempDir dir;
  PhantomScanSource source(tiny_scan());
  source.prepare();
  StreamOptions options;
  options.endpoint = "ipc://" + dir.file("nobody");
  options.confirm_timeout_s = 0.3;  // no requests endpoint: --no-confirm
  options.progress = false;
  const std::string message = stream_error(source, options);
  EXPECT_NE(message.find("no server is connected on the data endpoint ipc://" + dir.file("nobody")),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("nothing was sent"), std::string::npos) << message;
}

// A data endpoint that is some other ZeroMQ socket (here a ROUTER, as the requests endpoint is).
TEST(ScanStreamer, ADataEndpointOfTheWrongKindIsNamed) {
  TempDir dir;
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("ipc://" + dir.file("requests"));
  PhantomScanSource source(tiny_scan());
  source.prepare();
  StreamOptions options;
  options.endpoint = "ipc://" + dir.file("requests");
  options.confirm_timeout_s = 0.5;
  options.progress = false;
  const std::string message = stream_error(source, options);
  EXPECT_NE(message.find("not as slicestream-server's data endpoint"), std::string::npos)
      << message;
}

// slicestream-detector as a whole (run_detector): a simulated 6 x 10 scan of 4 projections, a dark
// and a flat, streamed to `sink` and confirmed through `requests`.
struct DetectorRun {
  int status = -1;
  std::string out;
  std::string err;
  std::vector<Received> messages;
};

DetectorRun run_tiny_detector(DataSink& sink, const std::string& data, const std::string& requests,
                              std::uint64_t scan_id, double confirm_timeout_s) {
  DetectorCommand command;
  command.mode = DetectorMode::kSimulate;
  command.simulate.rows = 6;
  command.simulate.cols = 10;
  command.simulate.frames = 4;
  command.simulate.darks = 1;
  command.simulate.flats = 1;
  command.simulate.threads = 1;
  command.geometry.projections_per_rotation = 4;
  command.stream.data_endpoint = data;
  command.stream.requests_endpoint = requests;
  command.stream.confirm_timeout_s = confirm_timeout_s;
  command.stream.fps = 0;
  command.stream.scan_id = scan_id;
  command.stream.quiet = true;
  std::ostringstream out;
  std::ostringstream err;
  std::atomic<bool> stop{false};
  DetectorRun run;
  std::thread detector([&] { run.status = run_detector(command, out, err, stop); });
  run.messages = sink.receive_scan();
  detector.join();
  run.out = out.str();
  run.err = err.str();
  return run;
}

// A server that reads every frame but never reports the scan as its own and ended (here: a
// stand-in whose status never changes) makes the detector give up after the confirmation
// timeout, say so, and exit with status 3.
TEST(ScanStreamer, AScanTheServerDoesNotConfirmExitsWithStatus3) {
  TempDir dir;
  const std::string data = "ipc://" + dir.file("data");
  const std::string requests = "ipc://" + dir.file("requests");
  DataSink sink(data);
  test::FakeStatusServer server(requests,
                                [](int) { return test::status_of(3, "reconstructing", 1, 0); });
  const DetectorRun run = run_tiny_detector(sink, data, requests, 77, 0.3);
  EXPECT_EQ(run.messages.size(), 8u);  // ScanBegin, 6 frames, ScanEnd: all sent
  EXPECT_EQ(run.status, kExitNotConfirmed);
  EXPECT_NE(run.err.find("error: scan 77 may be incomplete on the server: no confirmation of the "
                         "end of scan 77"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.out.find("NOT confirmed"), std::string::npos) << run.out;
  EXPECT_GE(server.calls(), 2);  // the baseline and at least one poll
}

// The same stand-in confirming the scan: exit status 0, and the summary says so.
TEST(ScanStreamer, AConfirmedScanExitsWithStatus0) {
  TempDir dir;
  const std::string data = "ipc://" + dir.file("data");
  const std::string requests = "ipc://" + dir.file("requests");
  DataSink sink(data);
  test::FakeStatusServer server(requests, [](int call) {
    return call == 0 ? test::status_of(3, "ended", 1, 10) : test::status_of(78, "ended", 2, 16, 4);
  });
  const DetectorRun run = run_tiny_detector(sink, data, requests, 78, 30);
  EXPECT_EQ(run.status, kExitDone) << run.err;
  EXPECT_NE(run.out.find("confirmed: the server ended scan 78 with all 6 frames accepted"),
            std::string::npos)
      << run.out;
}

TEST(ScanStreamer, QueueSizesScaleWithTheFrameSize) {
  EXPECT_EQ(default_send_hwm(480000), 2 * 128);          // FleX-ray uint16 frames: 128 queued
  EXPECT_EQ(default_send_hwm(2016 * 1800 * 4), 2 * 18);  // 14.5 MB frames: ~256 MB queued
  EXPECT_EQ(default_send_hwm(std::size_t{1} << 31), 2 * 2);
  EXPECT_EQ(default_lookahead(480000, 2), 64u);
  EXPECT_EQ(default_lookahead(2016 * 1800 * 4, 2), 36u);
  EXPECT_EQ(default_lookahead(std::size_t{1} << 31, 8), 8u);  // one per worker
}

}  // namespace
}  // namespace slicestream::detector
