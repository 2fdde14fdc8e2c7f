// The HTTP endpoint's routes over real loopback connections, with a fake server behind it:
// /healthz, /metrics (read by a strict Prometheus parser), /api/status, the viewer's files (and
// the paths that must not reach outside its folder), methods, limits and timeouts.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "server/http/http_endpoint.hpp"
#include "tests/server/http/fake_server_port.hpp"
#include "tests/server/http/http_test_client.hpp"
#include "tests/server/http/prometheus_parser.hpp"

namespace slicestream {
namespace {

namespace fs = std::filesystem;
using test::http_get;
using test::http_request;

StatusReport fake_report() {
  StatusReport report;
  report.backend = "cuda";
  report.backend_device = "Fake \"GPU\"\\";
  report.scan_state = ScanState::kReconstructing;
  report.scan_active = true;
  report.scan_id = 42;
  report.memory = {std::size_t{80} << 30, std::size_t{3} << 30, std::size_t{1} << 20};
  StageMetrics stage;
  stage.name = "filter";
  stage.items = 120;
  stage.rate_per_s = 83;
  stage.busy_fraction = 0.25;
  stage.queue_depth = 2;
  stage.queue_capacity = 64;
  stage.service_us.count = 120;
  stage.service_us.sum_us = 120 * 300.0;
  for (int k = 0; k < kLatencyBounds; ++k)
    stage.service_us.count_below_us[static_cast<std::size_t>(k)] = k >= 9 ? 120 : k >= 8 ? 60 : 0;
  report.metrics.stages = {stage};
  report.metrics.frames_received = 130;
  report.metrics.publications_coalesced = 17;
  report.metrics.projections_integrated = 120;
  report.metrics.discards = {{"bad_payload_size", 2}, {"odd \"reason\"\nwith\\escapes", 1}};
  report.metrics.frame_to_slice_us.count = 100;
  report.metrics.frame_to_slice_us.sum_us = 100 * 5000.0;
  for (int k = 13; k < kLatencyBounds; ++k)
    report.metrics.frame_to_slice_us.count_below_us[static_cast<std::size_t>(k)] = 100;
  report.metrics.slice_residuals = {{2, 0.031}};
  return report;
}

class HttpRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("slicestream-http-test-" + std::to_string(getpid()));
    fs::create_directories(root_ / "assets");
    std::ofstream(root_ / "index.html") << "<!doctype html><title>viewer</title>";
    std::ofstream(root_ / "assets" / "app.js") << "console.log('viewer');";
    std::ofstream(root_.parent_path() / "slicestream-secret.txt") << "secret";
    fs::create_symlink(root_.parent_path() / "slicestream-secret.txt", root_ / "link.txt");
    port_.set_report(fake_report());
    config_.listen = "127.0.0.1:0";
    config_.root = root_.string();
    config_.status_timeout_s = 0.5;
  }
  void TearDown() override {
    if (endpoint_) endpoint_->stop();
    fs::remove_all(root_);
    fs::remove(root_.parent_path() / "slicestream-secret.txt");
  }
  void start() {
    endpoint_ = std::make_unique<HttpEndpoint>(config_, port_, counters_);
    endpoint_->start();
  }
  const std::string& address() const { return endpoint_->address(); }

  fs::path root_;
  HttpConfig config_;
  test::FakeServerPort port_;
  HttpCounters counters_;
  std::unique_ptr<HttpEndpoint> endpoint_;
};

TEST_F(HttpRoutesTest, HealthzAnswersOk) {
  start();
  const auto result = http_get(address(), "/healthz");
  EXPECT_EQ(result.status, 200u) << result.error;
  EXPECT_EQ(result.body, "ok\n");
}

TEST_F(HttpRoutesTest, MetricsAreValidPrometheusTextWithTheServersValues) {
  start();
  ASSERT_EQ(http_get(address(), "/healthz").status, 200u);
  const auto result = http_get(address(), "/metrics");
  ASSERT_EQ(result.status, 200u) << result.error;
  EXPECT_EQ(result.content_type, "text/plain; version=0.0.4; charset=utf-8");
  std::map<std::string, test::PromFamily> families;
  ASSERT_NO_THROW(families = test::PromParser::parse(result.body)) << result.body;
  using test::prom_value;
  EXPECT_EQ(prom_value(families, "slicestream_status_available", "slicestream_status_available"),
            1);
  EXPECT_EQ(prom_value(families, "slicestream_frames_received_total",
                       "slicestream_frames_received_total"),
            130);
  EXPECT_EQ(prom_value(families, "slicestream_publications_coalesced_total",
                       "slicestream_publications_coalesced_total"),
            17);
  EXPECT_EQ(prom_value(families, "slicestream_discards_total", "slicestream_discards_total",
                       {{"reason", "odd \"reason\"\nwith\\escapes"}}),
            1)
      << "label values must be escaped and read back exactly";
  EXPECT_EQ(prom_value(families, "slicestream_scan_state", "slicestream_scan_state",
                       {{"state", "reconstructing"}}),
            1);
  EXPECT_EQ(
      prom_value(families, "slicestream_scan_state", "slicestream_scan_state", {{"state", "idle"}}),
      0);
  EXPECT_EQ(prom_value(families, "slicestream_stage_queue_depth", "slicestream_stage_queue_depth",
                       {{"stage", "filter"}}),
            2);
  // 60 of the 120 service times lie below 2^8 us = 256 us, all below 512 us.
  EXPECT_EQ(prom_value(families, "slicestream_stage_service_seconds",
                       "slicestream_stage_service_seconds_bucket",
                       {{"stage", "filter"}, {"le", "0.000256"}}),
            60);
  EXPECT_EQ(
      prom_value(families, "slicestream_stage_service_seconds",
                 "slicestream_stage_service_seconds_bucket", {{"stage", "filter"}, {"le", "+Inf"}}),
      120);
  EXPECT_NEAR(prom_value(families, "slicestream_stage_service_seconds",
                         "slicestream_stage_service_seconds_sum", {{"stage", "filter"}}),
              0.036, 1e-12);
  EXPECT_EQ(families.at("slicestream_frame_to_slice_latency_seconds").type, "histogram");
  EXPECT_EQ(prom_value(families, "slicestream_backend_memory_total_bytes",
                       "slicestream_backend_memory_total_bytes",
                       {{"backend", "cuda"}, {"memory", "device"}}),
            80.0 * (1u << 30));
  EXPECT_EQ(prom_value(families, "slicestream_backend_info", "slicestream_backend_info",
                       {{"device", "Fake \"GPU\"\\"}}),
            1);
  EXPECT_EQ(prom_value(families, "slicestream_requests_total", "slicestream_requests_total",
                       {{"endpoint", "websocket"}, {"type", "get_status"}, {"status", "ok"}}),
            4);
  EXPECT_EQ(
      prom_value(families, "slicestream_zmq_requests_total", "slicestream_zmq_requests_total"), 3);
  EXPECT_EQ(prom_value(families, "slicestream_slice_residual", "slicestream_slice_residual",
                       {{"slice", "2"}}),
            0.031);
  EXPECT_GE(
      prom_value(families, "slicestream_http_responses_total", "slicestream_http_responses_total",
                 {{"route", "/healthz"}, {"code", "200"}}),
      1);
  EXPECT_GT(prom_value(families, "process_resident_memory_bytes", "process_resident_memory_bytes"),
            1e6);
  EXPECT_GT(prom_value(families, "process_start_time_seconds", "process_start_time_seconds"),
            1.6e9);
}

TEST_F(HttpRoutesTest, StrictParserRefusesWhatPrometheusRefuses) {
  using test::PromParser;
  EXPECT_THROW(PromParser::parse("x 1\n"), std::runtime_error) << "no TYPE";
  EXPECT_THROW(PromParser::parse("# TYPE x_total counter\nx_total{a=\"\\q\"} 1\n"),
               std::runtime_error)
      << "bad escape";
  EXPECT_THROW(PromParser::parse("# TYPE x counter\nx 1\n"), std::runtime_error) << "no _total";
  EXPECT_THROW(PromParser::parse("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\n"
                                 "h_bucket{le=\"+Inf\"} 2\nh_count 2\nh_sum 1\n"),
               std::runtime_error)
      << "not cumulative";
  EXPECT_THROW(PromParser::parse("# TYPE g gauge\ng 1\n# TYPE f gauge\nf 1\ng{a=\"b\"} 2\n"),
               std::runtime_error)
      << "samples of g not together";
  EXPECT_NO_THROW(PromParser::parse("# HELP g a gauge\n# TYPE g gauge\ng{a=\"x\\\"y\"} NaN\n"));
}

TEST_F(HttpRoutesTest, ApiStatusIsTheStatusReportAsJson) {
  start();
  const auto result = http_get(address(), "/api/status");
  ASSERT_EQ(result.status, 200u) << result.error << result.body;
  EXPECT_EQ(result.content_type, "application/json");
  ASSERT_EQ(port_.requests().size(), 1u);
  EXPECT_TRUE(port_.requests()[0].has_get_status());
  EXPECT_EQ(port_.endpoints()[0], "http");
}

TEST_F(HttpRoutesTest, StatusRoutesAnswer503WhenThePipelineDoesNotAnswerInTime) {
  start();
  port_.hold();
  EXPECT_EQ(http_get(address(), "/metrics").status, 503u);
  EXPECT_EQ(http_get(address(), "/api/status").status, 503u);
  port_.release();  // late answers are ignored
  EXPECT_EQ(http_get(address(), "/healthz").status, 200u);
}

TEST_F(HttpRoutesTest, ServesTheViewerFilesAndNothingOutsideTheirFolder) {
  start();
  auto index = http_get(address(), "/");
  EXPECT_EQ(index.status, 200u);
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
  EXPECT_NE(index.body.find("viewer"), std::string::npos);
  auto script = http_get(address(), "/assets/app.js?v=1");
  EXPECT_EQ(script.status, 200u);
  EXPECT_EQ(script.content_type, "text/javascript; charset=utf-8");
  auto head = http_request(address(), http::verb::head, "/index.html");
  EXPECT_EQ(head.status, 200u);
  EXPECT_TRUE(head.body.empty());
  for (const char* bad : {"/../slicestream-secret.txt", "/assets/../../slicestream-secret.txt",
                          "/%2e%2e/slicestream-secret.txt", "/link.txt", "/.hidden", "//etc/passwd",
                          "/assets/", "/nothing.js"}) {
    auto result = http_get(address(), bad);
    EXPECT_EQ(result.status, 404u) << bad;
    EXPECT_EQ(result.body.find("secret"), std::string::npos) << bad;
  }
}

TEST_F(HttpRoutesTest, RefusesOtherMethodsLargeHeadersAndNonUpgradeWs) {
  start();
  EXPECT_EQ(http_request(address(), http::verb::post, "/api/status").status, 405u);
  EXPECT_EQ(http_request(address(), http::verb::get, "/", 10000, 32u << 10).status, 431u);
  EXPECT_EQ(http_get(address(), "/ws").status, 426u);
  EXPECT_GE(counters_.responses().at({"method", 405}), 1u);
}

TEST_F(HttpRoutesTest, RefusesConnectionsOverTheLimit) {
  config_.max_connections = 2;
  start();
  net::io_context io;
  tcp::socket first = test::connect_to(io, address(), 5000);
  tcp::socket second = test::connect_to(io, address(), 5000);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (counters_.connections_open.load() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto refused = http_get(address(), "/healthz");
  EXPECT_EQ(refused.status, 503u) << refused.error;
  EXPECT_EQ(counters_.connections_refused.load(), 1u);
  first.close();
  second.close();
}

TEST_F(HttpRoutesTest, WithoutViewerFilesThePageSaysHowToGetThem) {
  config_.root = "";
  start();
  auto result = http_get(address(), "/");
  if (endpoint_->viewer_root().empty()) {
    EXPECT_EQ(result.status, 404u);
    EXPECT_NE(result.body.find("slicestream_web"), std::string::npos);
  }
}

TEST(HttpEndpointConfig, BindFailuresAndBadAddressesAreClearErrors) {
  test::FakeServerPort port;
  HttpCounters counters;
  HttpConfig config;
  config.listen = "127.0.0.1:0";
  HttpEndpoint first(config, port, counters);
  config.listen = first.address().substr(7);
  try {
    HttpEndpoint second(config, port, counters);
    FAIL() << "binding a port in use must fail";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("http endpoint"), std::string::npos) << error.what();
  }
  for (const char* bad : {"8080", "localhost:8080", "127.0.0.1:99999", "127.0.0.1:", ":80"}) {
    config.listen = bad;
    EXPECT_THROW(HttpEndpoint(config, port, counters), std::runtime_error) << bad;
  }
}

}  // namespace
}  // namespace slicestream
