// ZeroMQ CURVE on every endpoint of the real server: a client with an allowed key works (requests,
// data, slices), a client with another key and a plain client get nothing through, and each
// refusal is counted and logged.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "clients/common/data_sender.hpp"
#include "clients/common/request_client.hpp"
#include "clients/common/slice_subscriber.hpp"
#include "server/server.hpp"
#include "tests/server/log_capture.hpp"
#include "tests/server/loopback_support.hpp"
#include "tests/server/phantom_scan.hpp"

namespace slicestream {
namespace {

using client::ClientSecurity;
using client::CurveClientKeys;

ClientSecurity client_keys(const CurveKeyPair& server, const CurveKeyPair& own) {
  return ClientSecurity{CurveClientKeys{server.public_key, own.public_key, own.secret_key}};
}

// Waits up to 10 s for `counter` of `server` to reach `at_least`.
bool wait_counter(const Server& server, const std::string& counter, std::uint64_t at_least) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const CounterMap counters = server.counters();
    const auto it = counters.find(counter);
    if (it != counters.end() && it->second >= at_least) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class CurveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(curve_available());
    server_keys_ = generate_curve_key_pair();
    allowed_ = generate_curve_key_pair();
    other_ = generate_curve_key_pair();
    ServerConfig config = test::loopback_config(16);
    config.security.curve = server_keys_;
    config.security.allowed_clients = {allowed_.public_key};
    server_ = std::make_unique<Server>(config, test::cpu_backend());
    server_->start();
  }
  void TearDown() override { server_->stop(false); }

  test::LogCapture log_;
  CurveKeyPair server_keys_, allowed_, other_;
  std::unique_ptr<Server> server_;
};

TEST_F(CurveTest, AnAllowedKeyGetsRequestsAnswered) {
  client::RequestClient requests(server_->requests_address(), 10000,
                                 client_keys(server_keys_, allowed_));
  const client::Response status = requests.get_status();
  EXPECT_TRUE(status.ok());
  EXPECT_TRUE(wait_counter(*server_, "requests_clients_admitted", 1));
}

TEST_F(CurveTest, AnotherKeyIsRefusedCountedAndLogged) {
  client::RequestClient requests(server_->requests_address(), 1000,
                                 client_keys(server_keys_, other_));
  EXPECT_THROW(requests.get_status(), client::TimeoutError);
  EXPECT_TRUE(wait_counter(*server_, "requests_clients_refused", 1));
  EXPECT_EQ(server_->counters().at("requests"), 0u) << "nothing of it was read";
  EXPECT_NE(log_.text().find("refused a client"), std::string::npos);
  EXPECT_NE(log_.text().find(other_.public_key), std::string::npos) << "the log names the key";
}

// A timeout shortened after the client was made bounds every call of a refused client: each
// ends with a TimeoutError well before the minute the client was made with.
TEST_F(CurveTest, AShortenedTimeoutBoundsEveryCallOfARefusedClient) {
  client::RequestClient requests(server_->requests_address(), 60000,
                                 client_keys(server_keys_, other_));
  requests.set_timeout_ms(300);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(requests.get_status(), client::TimeoutError);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  }
}

TEST_F(CurveTest, APlainClientIsRefusedAndCounted) {
  client::RequestClient requests(server_->requests_address(), 1000);
  EXPECT_THROW(requests.get_status(), client::TimeoutError);
  EXPECT_TRUE(wait_counter(*server_, "requests_handshakes_failed", 1));
  EXPECT_EQ(server_->counters().at("requests"), 0u);
}

TEST_F(CurveTest, OnlyTheAllowedDetectorStreamsAndOnlyTheAllowedViewerSubscribes) {
  const test::PhantomScan scan = test::make_parallel_scan(3, {4, 16}, 8);
  {
    client::DataSender intruder(server_->data_address(), 16, client_keys(server_keys_, other_));
    intruder.send_scan_begin(scan.begin);
    intruder.close(200);
  }
  EXPECT_TRUE(wait_counter(*server_, "data_clients_refused", 1));
  EXPECT_EQ(server_->counters().at("data_messages"), 0u);

  client::SliceSubscriber viewer(server_->slices_address(), {client::Topic::kEvent}, 100,
                                 client_keys(server_keys_, allowed_));
  client::SliceSubscriber snoop(server_->slices_address(), {client::Topic::kEvent}, 100);
  client::DataSender detector(server_->data_address(), 16, client_keys(server_keys_, allowed_));
  // The subscription must reach the server before the event: send ScanBegins until one arrives.
  bool started = false;
  for (int attempt = 0; attempt < 100 && !started; ++attempt) {
    detector.send_scan_begin(scan.begin);
    const std::optional<client::Publication> got = viewer.receive(100);
    started = got && got->header.event().kind() == v1::EVENT_KIND_SCAN_STARTED;
  }
  EXPECT_TRUE(started) << "the allowed viewer saw the scan start";
  EXPECT_FALSE(snoop.receive(300).has_value()) << "a plain subscriber receives nothing";
  EXPECT_TRUE(wait_counter(*server_, "slices_handshakes_failed", 1));
  detector.close(1000);
}

}  // namespace
}  // namespace slicestream
