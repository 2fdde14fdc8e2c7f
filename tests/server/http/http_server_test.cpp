// The HTTP endpoint inside the real Server (CPU backend, loopback): a WebSocket client watches a
// phantom scan arrive (slices that match the phantom and the requests endpoint's GetSlice), moves
// a slice and gets it reconstructed from the window, sees an invalid request refused with its
// reason; /metrics is valid Prometheus text with the scan's counts and /api/status describes the
// scan.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "clients/common/request_client.hpp"
#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "server/server.hpp"
#include "tests/server/http/http_test_client.hpp"
#include "tests/server/http/prometheus_parser.hpp"
#include "tests/server/loopback_support.hpp"
#include "tests/server/phantom_scan.hpp"

namespace slicestream {
namespace {

constexpr int kSliceSize = 48;
constexpr std::uint32_t kProjections = 96;
constexpr double kMaxPhantomError = 0.12;  // 48-pixel slices of a 64-column detector

double phantom_error(const test::PhantomScan& scan, const test::WsMessage& slice) {
  const std::vector<double> values = slice.numbers_at({"header", "slice", "orientation", "values"});
  EXPECT_EQ(values.size(), 9u);
  SliceOrientation orientation;
  for (std::size_t i = 0; i < 9 && i < values.size(); ++i)
    orientation.values[i] = static_cast<float>(values[i]);
  const int width = static_cast<int>(slice.number_at({"header", "slice", "width"}));
  const int height = static_cast<int>(slice.number_at({"header", "slice", "height"}));
  const std::vector<float> reference =
      phantom::sample(scan.phantom, slice_grid(orientation, width, height), 3);
  return test::relative_error(slice.values, reference);
}

// Reads images until `done` holds for the newest slice per id (or the deadline passes).
bool watch(test::TestWebSocket& ws, std::map<std::uint32_t, test::WsMessage>& newest,
           const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    auto message = ws.receive();
    if (!message) return false;
    if (message->type() == "slice") {
      newest[static_cast<std::uint32_t>(message->number_at({"header", "slice", "slice_id"}))] =
          std::move(*message);
    }
  }
  return true;
}

TEST(HttpServer, ABrowserClientWatchesAndSteersAPhantomScan) {
  Server server(test::loopback_config(kSliceSize), test::cpu_backend());
  server.start();
  ASSERT_FALSE(server.http_address().empty());
  test::TestWebSocket ws(server.http_address(), "/ws?encoding=f32&preview=0");
  ASSERT_EQ(ws.receive_type("hello")->type(), "hello");

  const test::PhantomScan scan =
      test::make_parallel_scan(5, {48, 64}, static_cast<int>(kProjections));
  test::wait_read(server, test::send_scan(server.data_address(), scan, kProjections));
  server.wait_idle();

  // The three default slices, final: they match the phantom.
  std::map<std::uint32_t, test::WsMessage> newest;
  ASSERT_TRUE(watch(ws, newest, [&] {
    int final_slices = 0;
    for (std::uint32_t id = 0; id < 3; ++id) {
      auto it = newest.find(id);
      final_slices +=
          it != newest.end() &&
          it->second.number_at({"header", "slice", "projections_integrated"}) == kProjections;
    }
    return final_slices == 3;
  })) << ws.error().message();
  for (std::uint32_t id = 0; id < 3; ++id) {
    const double error = phantom_error(scan, newest[id]);
    std::printf("websocket slice %u: relative error %.4f to the phantom\n", id, error);
    EXPECT_LT(error, kMaxPhantomError) << "slice " << id;
  }

  // The same image as a one-shot GetSlice on the requests endpoint.
  client::RequestClient requests(server.requests_address(), 20000);
  client::Orientation axial;
  const std::vector<double> axial_values =
      newest[2].numbers_at({"header", "slice", "orientation", "values"});
  ASSERT_EQ(axial_values.size(), 9u);
  for (std::size_t i = 0; i < 9; ++i)
    axial[i] = static_cast<float>(axial_values[i]);
  const client::Response got = requests.get_slice(axial, kSliceSize, kSliceSize);
  ASSERT_TRUE(got.ok()) << got.reply.message();
  EXPECT_LT(test::relative_error(newest[2].values, got.values), 1e-4);

  // Move a slice from the browser: an oblique slice 7 through the box, reconstructed from the
  // window and published at once.
  const Vec3 e = scan.box.extent();
  const SliceOrientation oblique = SliceOrientation::from_axes(
      {e.x, 0, 0}, {0, 0.7 * e.y, 0.7 * e.z}, {scan.box.min_mm.x, -0.35 * e.y, -0.35 * e.z});
  std::string values;
  for (float v : oblique.values)
    values += (values.empty() ? "" : ",") + std::to_string(v);
  ws.send_text(R"({"protocol_version":1,"request_id":"11","set_slice":{"slice_id":7,)"
               R"("orientation":{"values":[)" +
               values + R"(]},"width":48,"height":40}})");
  ASSERT_TRUE(watch(ws, newest, [&] { return newest.count(7) > 0; }));
  EXPECT_EQ(newest[7].number_at({"header", "slice", "projections_integrated"}), kProjections);
  EXPECT_LT(phantom_error(scan, newest[7]), kMaxPhantomError);

  // An invalid request is refused with the codec's reason, like on the requests endpoint.
  ws.send_text(R"({"protocol_version":1,"request_id":"12","set_slice":{"slice_id":8,)"
               R"("orientation":{"values":[1,0,0,0,1,0,0,0,0]},"width":0,"height":40}})");
  auto refused = ws.receive_type("reply");
  while (refused && refused->string_at({"reply", "request_id"}) != "12")
    refused = ws.receive_type("reply");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->string_at({"reply", "code"}), "STATUS_CODE_INVALID_ARGUMENT");
  EXPECT_FALSE(refused->string_at({"reply", "message"}).empty());

  // /metrics: valid, with the scan's numbers and the requests by endpoint.
  const auto metrics = test::http_get(server.http_address(), "/metrics");
  ASSERT_EQ(metrics.status, 200u);
  std::map<std::string, test::PromFamily> families;
  ASSERT_NO_THROW(families = test::PromParser::parse(metrics.body));
  using test::prom_value;
  EXPECT_EQ(prom_value(families, "slicestream_projections_integrated_total",
                       "slicestream_projections_integrated_total"),
            kProjections);
  EXPECT_EQ(prom_value(families, "slicestream_frames_received_total",
                       "slicestream_frames_received_total"),
            kProjections + 2);
  EXPECT_EQ(prom_value(families, "slicestream_requests_total", "slicestream_requests_total",
                       {{"endpoint", "websocket"}, {"type", "set_slice"}, {"status", "ok"}}),
            1);
  EXPECT_EQ(prom_value(
                families, "slicestream_requests_total", "slicestream_requests_total",
                {{"endpoint", "websocket"}, {"type", "set_slice"}, {"status", "invalid_argument"}}),
            1);
  EXPECT_EQ(prom_value(families, "slicestream_requests_total", "slicestream_requests_total",
                       {{"endpoint", "requests"}, {"type", "get_slice"}, {"status", "ok"}}),
            1);
  EXPECT_EQ(prom_value(families, "slicestream_frame_to_slice_latency_seconds",
                       "slicestream_frame_to_slice_latency_seconds_count"),
            kProjections);
  EXPECT_EQ(prom_value(families, "slicestream_scan_state", "slicestream_scan_state",
                       {{"state", "ended"}}),
            1);

  // /api/status: the StatusReport, with the scan's box for the viewer's 3D view.
  const auto status = test::http_get(server.http_address(), "/api/status");
  ASSERT_EQ(status.status, 200u);
  v1::StatusReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(status.body, &report).ok());
  EXPECT_EQ(report.scan_id(), 5u);
  EXPECT_EQ(report.scan().detector_cols(), 64u);
  EXPECT_EQ(report.scan().projections_per_rotation(), kProjections);
  EXPECT_EQ(report.scan().volume().max_mm().x(), scan.box.max_mm.x);
  EXPECT_GT(report.memory().total_bytes(), 0u);
  EXPECT_GT(report.memory().used_by_scan_bytes(), 0u);
  server.stop(/*drain=*/true);
}

}  // namespace
}  // namespace slicestream
