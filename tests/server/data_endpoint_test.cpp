// The data endpoint over real loopback sockets, with a fake pipeline: messages arrive decoded and
// in order, bad input is reported with its reason, and back-pressure loses nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <future>

#include "clients/common/data_sender.hpp"
#include "server/data_endpoint.hpp"
#include "tests/server/fake_pipeline.hpp"
#include "tests/server/wire_builders.hpp"

namespace slicestream {
namespace {

using test::Random;

class DataEndpointTest : public ::testing::Test {
 protected:
  void start(int receive_hwm = 1000) {
    endpoint_ = std::make_unique<DataEndpoint>(context_, "tcp://127.0.0.1:*", receive_hwm,
                                               WireLimits{}, ServerSecurity{}, fake_, counters_);
    endpoint_->start();
  }
  void TearDown() override {
    fake_.open_gate();
    if (endpoint_) endpoint_->stop();
  }

  zmq::context_t context_{1};
  test::FakePipeline fake_;
  ServerCounters counters_;
  std::unique_ptr<DataEndpoint> endpoint_;
};

TEST_F(DataEndpointTest, ScanArrivesDecodedAndInOrder) {
  start();
  Random random;
  SCOPED_TRACE(random.seed);
  const v1::ScanBegin scan = test::random_scan_begin(random, test::GeometryKind::kCone, 8);
  const std::uint32_t rows = scan.detector_rows(), cols = scan.detector_cols();
  std::vector<std::vector<std::uint16_t>> frames(6, std::vector<std::uint16_t>(rows * cols));
  for (auto& frame : frames) {
    for (auto& pixel : frame)
      pixel = static_cast<std::uint16_t>(random.integer(0, 65535));
  }
  client::DataSender sender(endpoint_->address());
  sender.send_scan_begin(scan);
  for (std::uint32_t i = 0; i < frames.size(); ++i) {
    v1::Frame header = test::frame_header(scan.scan_id(), rows, cols);
    header.set_index(i);
    sender.send_frame(header, frames[i].data(), frames[i].size() * 2);
  }
  v1::ScanEnd end;
  end.set_scan_id(scan.scan_id());
  end.set_frames_sent(frames.size());
  sender.send_scan_end(end);
  sender.close();

  ASSERT_TRUE(fake_.wait_for([&] { return fake_.messages_locked() == frames.size() + 2; }));
  std::vector<DataMessage> got = fake_.take_messages();
  EXPECT_EQ(std::get<ScanBegin>(got[0]).scan.scan_id, scan.scan_id());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const auto& frame = std::get<RawFrame>(got[i + 1]);
    EXPECT_EQ(frame.index, i);
    EXPECT_GT(frame.arrival_ns, 0u);
    ASSERT_EQ(frame.payload_bytes, frames[i].size() * 2);
    EXPECT_EQ(std::memcmp(frame.payload.get(), frames[i].data(), frame.payload_bytes), 0);
  }
  EXPECT_EQ(std::get<ScanEnd>(got.back()).frames_sent, frames.size());
  EXPECT_EQ(counters_.data_messages.load(), frames.size() + 2);
  EXPECT_EQ(counters_.data_rejected.load(), 0u);
}

TEST_F(DataEndpointTest, BadInputIsReportedAndTheEndpointStaysAlive) {
  start();
  zmq::socket_t push(context_, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 1000);
  push.connect(endpoint_->address());
  auto send = [&](std::vector<std::string> parts) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      push.send(zmq::buffer(parts[i]),
                i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  };
  send({std::string(30, '\x07')});                                                // undecodable
  send({test::header_bytes(test::frame_header(4, 2, 3))});                        // no payload
  send({test::header_bytes(test::frame_header(4, 2, 3)), std::string(11, 'x')});  // 11 != 12
  send({test::header_bytes(test::frame_header(4, 2, 3)), std::string(12, 'x'), "third"});
  send({test::header_bytes(test::frame_header(4, 2, 3)), std::string(12, 'x')});  // valid

  ASSERT_TRUE(fake_.wait_for(
      [&] { return fake_.rejections_locked() == 4 && fake_.messages_locked() == 1; }));
  const auto rejected = fake_.rejections();
  EXPECT_EQ(rejected[0].reason, "undecodable_header");
  EXPECT_EQ(rejected[1].reason, "bad_parts");
  EXPECT_EQ(rejected[2].reason, "bad_payload_size");
  EXPECT_EQ(rejected[3].reason, "bad_parts");
  EXPECT_EQ(rejected[2].scan_id, 4u);
  EXPECT_EQ(counters_.data_rejected.load(), 4u);
  EXPECT_EQ(std::get<RawFrame>(fake_.take_messages()[0]).payload_bytes, 12u);
}

TEST_F(DataEndpointTest, BackPressureBlocksTheSenderAndLosesNothing) {
  start(/*receive_hwm=*/2);
  fake_.close_gate();  // the pipeline is full: submit blocks
  constexpr int kFrames = 40;
  constexpr std::uint32_t kRows = 512, kCols = 1024;  // 1 MiB per frame: more than socket buffers
  std::atomic<int> sent{0};
  auto sender_done = std::async(std::launch::async, [&] {
    client::DataSender sender(endpoint_->address(), /*send_hwm=*/2);
    std::vector<std::uint16_t> pixels(kRows * kCols);
    for (int i = 0; i < kFrames; ++i) {
      std::fill(pixels.begin(), pixels.end(), static_cast<std::uint16_t>(i));
      v1::Frame header = test::frame_header(1, kRows, kCols);
      header.set_index(static_cast<std::uint32_t>(i));
      sender.send_frame(header, pixels.data(), pixels.size() * 2);
      ++sent;
    }
    sender.close();
  });
  // While the pipeline is blocked the sender must stall (ZeroMQ's high-water marks).
  EXPECT_EQ(sender_done.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout);
  EXPECT_LT(sent.load(), kFrames);
  fake_.open_gate();
  sender_done.get();
  ASSERT_TRUE(fake_.wait_for([&] { return fake_.messages_locked() == kFrames; }));
  std::vector<DataMessage> got = fake_.take_messages();
  for (int i = 0; i < kFrames; ++i) {
    const auto& frame = std::get<RawFrame>(got[static_cast<std::size_t>(i)]);
    EXPECT_EQ(frame.index, static_cast<std::uint32_t>(i));
    EXPECT_EQ(*reinterpret_cast<const std::uint16_t*>(frame.payload.get()), i);
  }
  // Large payloads get their own (aligned) buffer from ZeroMQ: handed on without any copy.
  EXPECT_EQ(counters_.payloads_realigned.load(), 0u);
}

}  // namespace
}  // namespace slicestream
