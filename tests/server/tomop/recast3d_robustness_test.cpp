// Bad tomop input and misbehaving viewers: the server keeps running, counts and reports every
// refusal, reconstructs the next scan correctly, and never sends a viewer a scene id it did not
// hand out (a restarted viewer gets a new scene first).
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "clients/common/request_client.hpp"
#include "tests/common/time_scale.hpp"
#include "tests/server/live_subscriber.hpp"
#include "tests/server/loopback_support.hpp"
#include "tests/server/phantom_scan.hpp"
#include "tests/server/tomop/golden_bytes.hpp"
#include "tests/server/tomop/test_adapter.hpp"
#include "tests/server/tomop/test_viewer.hpp"

namespace slicestream {
namespace {

using test::TestAdapter;
using test::TestViewer;

const DetectorShape kDetector{16, 64};
constexpr int kProjections = 90;

// A server whose RECAST3D bridge talks to the viewer at `requests` / `updates`, and one scan
// streamed to it through the tomop data port.
struct BridgedScan {
  BridgedScan(const std::string& requests, const std::string& updates)
      : server(config(requests, updates), test::cpu_backend()) {
    server.start();
    adapter.emplace(server.tomop_data_address());
    adapter->send_scan_header(scan);
    adapter->send_projections(scan, 0, kProjections);
  }
  static ServerConfig config(const std::string& requests, const std::string& updates) {
    ServerConfig c = test::loopback_config(32);
    c.tomop.data = "tcp://127.0.0.1:*";
    c.tomop.recast3d.requests = requests;
    c.tomop.recast3d.updates = updates;
    return c;
  }

  Server server;
  const test::PhantomScan scan = test::make_parallel_scan(1, kDetector, kProjections);
  std::optional<TestAdapter> adapter;
};

TEST(Recast3dRobustness, BadTomopInputIsAnsweredCountedAndTheNextScanIsCorrect) {
  ServerConfig config = test::loopback_config(64);
  config.tomop.data = "tcp://127.0.0.1:*";
  config.tomop.data_socket = tomop::DataSocketKind::kRep;
  Server server(config, test::cpu_backend());
  server.start();
  test::LiveSubscriber live(server.slices_address());
  TestAdapter adapter(server.tomop_data_address(), /*request_reply=*/true);

  const test::PhantomScan scan = test::make_parallel_scan(1, kDetector, kProjections);
  const std::vector<float> pixels(kDetector.pixels(), 1000.0f);
  const std::vector<float> angles(kProjections, 0.1f);
  adapter.set_shape(kDetector.rows, kDetector.cols);
  // Each refused packet is answered 0 (a REQ adapter never waits forever).
  const std::vector<std::pair<std::vector<std::byte>, const char*>> bad = {
      {test::Bytes().byte(9).byte(3).byte(0), "truncated_packet"},
      {test::Bytes().i32(0x999).i32(0), "unknown_packet"},
      {test::Bytes().i32(0x309).i32(2).i32(0).i32(16).i32(64).i32(0x7fffffff), "truncated_packet"},
      {tomop::encode(adapter.projection(2, 0, pixels)), "no_active_scan"},
      {tomop::encode(
           tomop::ParallelBeamGeometry{0, 16, 64, kProjections, tomop::FloatView::of(angles)}),
       "no_volume"},
      {tomop::encode(tomop::SliceData{0, 0, {64, 16}, tomop::FloatView::of(pixels), false}),
       "unsupported_packet"},
  };
  for (const auto& [bytes, reason] : bad) {
    EXPECT_EQ(adapter.send_bytes(bytes), 0) << reason;
  }
  adapter.send_scan_header(scan);
  const std::vector<std::pair<tomop::Projection, const char*>> bad_projections = {
      {tomop::Projection{2, 0, {64, 16}, tomop::FloatView::of(pixels)}, "shape_mismatch"},
      {tomop::Projection{7, 0, {16, 64}, tomop::FloatView::of(pixels)}, "bad_frame_kind"},
      {tomop::Projection{2, -3, {16, 64}, tomop::FloatView::of(pixels)}, "index_out_of_range"},
  };
  for (const auto& [projection, reason] : bad_projections) {
    EXPECT_EQ(adapter.send(projection), 0) << reason;
  }
  // A dark beyond the declared count passes the feed; the pipeline refuses it.
  EXPECT_EQ(adapter.send(adapter.projection(0, 5, pixels)), 1);
  adapter.send_projections(scan, 0, kProjections);
  server.wait_idle();

  const MetricsSnapshot metrics = server.metrics();
  for (const char* reason :
       {"truncated_packet", "unknown_packet", "no_active_scan", "no_volume", "unsupported_packet",
        "shape_mismatch", "bad_frame_kind", "index_out_of_range"}) {
    EXPECT_GE(metrics.discards.count(reason), 1u) << reason;
  }
  EXPECT_EQ(metrics.discards.at("truncated_packet"), 2u);
  EXPECT_EQ(metrics.discards.at("index_out_of_range"), 2u);  // the feed's and the pipeline's
  EXPECT_EQ(server.counters().at("tomop_rejected"), 9u);
  EXPECT_EQ(metrics.projections_integrated, static_cast<std::uint64_t>(kProjections));

  // The scan after all that is reconstructed as without it.
  client::RequestClient requests(server.requests_address(), 10000);
  SliceOrientation axial = default_slices(scan.box)[2];
  const client::Response got = requests.get_slice(axial.values, 64, 64);
  ASSERT_TRUE(got.ok());
  const std::vector<float> reference = phantom::sample(scan.phantom, slice_grid(axial, 64, 64), 3);
  EXPECT_LT(test::relative_error(got.values, reference), 0.12);
  EXPECT_TRUE(live.wait_for([&] { return !live.events_locked().empty(); }))
      << "refusals are published as events";
}

TEST(Recast3dRobustness, ARestartedViewerGetsANewSceneAndNothingStale) {
  auto first = std::make_unique<TestViewer>("tcp://127.0.0.1:*", "tcp://127.0.0.1:*");
  const std::string requests_address = first->requests_address();
  const std::string updates_address = first->updates_address();
  BridgedScan bridged(requests_address, updates_address);
  Server& server = bridged.server;
  TestAdapter& adapter = *bridged.adapter;
  const test::PhantomScan& scan = bridged.scan;
  ASSERT_TRUE(first->wait_for([&] { return first->images().size() == 3; }));
  {
    std::lock_guard<std::mutex> lock(first->mutex());
    EXPECT_TRUE(first->violations().empty()) << first->violations().front();
  }
  first.reset();  // the viewer process ends

  // A new viewer on the same ports hands out other scene ids: anything stale would show.
  TestViewer second(requests_address, updates_address, /*first_scene_id=*/100);
  ASSERT_TRUE(second.wait_for([&] { return second.images().size() == 3; }))
      << "the restarted viewer got no slices";
  adapter.send_projections(scan, kProjections, 10);  // and updates keep coming
  server.wait_idle();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {
    std::lock_guard<std::mutex> lock(second.mutex());
    EXPECT_TRUE(second.violations().empty()) << second.violations().front();
    EXPECT_EQ(second.received(tomop::PacketId::kMakeScene), 1u);
    EXPECT_EQ(second.controls().size(), 5u);
  }
  EXPECT_GE(server.counters().at("recast3d_scenes"), 2u);

  // The user deletes the scene: nothing more for it; the next scan makes a new one.
  const std::uint64_t sent = server.counters().at("recast3d_slices_sent");
  second.publish(tomop::KillScene{second.scene()});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  adapter.send_projections(scan, kProjections + 10, 10);
  server.wait_idle();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server.counters().at("recast3d_slices_sent"), sent) << "images for a deleted scene";
  adapter.send_scan_header(scan);
  ASSERT_TRUE(second.wait_for([&] { return second.received(tomop::PacketId::kMakeScene) == 2; }))
      << "no new scene at the next scan";
  std::lock_guard<std::mutex> lock(second.mutex());
  EXPECT_TRUE(second.violations().empty()) << second.violations().front();
}

TEST(Recast3dRobustness, AnAbsentOrSilentViewerNeverHoldsThePipeline) {
  // A REP socket that takes packets and never answers, like a hung viewer.
  zmq::context_t context(1);
  zmq::socket_t silent(context, zmq::socket_type::rep);
  silent.set(zmq::sockopt::linger, 0);
  silent.bind("tcp://127.0.0.1:*");
  ServerConfig config = test::loopback_config(32);
  config.tomop.data = "tcp://127.0.0.1:*";
  config.tomop.recast3d.requests = silent.get(zmq::sockopt::last_endpoint);
  config.tomop.recast3d.updates = "tcp://127.0.0.1:1";  // nothing there
  config.tomop.recast3d.reply_timeout = std::chrono::milliseconds(200);
  Server server(config, test::cpu_backend());
  server.start();
  test::LiveSubscriber live(server.slices_address());
  const test::PhantomScan scan = test::make_parallel_scan(1, kDetector, kProjections);
  TestAdapter adapter(server.tomop_data_address());
  adapter.send_scan_header(scan);
  adapter.send_projections(scan, 0, kProjections);
  const auto read_by = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (server.counters().at("tomop_packets") < adapter.sent() &&
         std::chrono::steady_clock::now() < read_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  server.wait_idle();
  EXPECT_EQ(server.metrics().projections_integrated, static_cast<std::uint64_t>(kProjections));
  EXPECT_TRUE(live.wait_for([&] { return live.slices_locked().size() == 3; }));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server.counters().at("recast3d_unreachable") < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(server.counters().at("recast3d_unreachable"), 2u) << "retried after each timeout";
  EXPECT_EQ(server.counters().at("recast3d_scenes"), 0u);
}

// The bridge's copies of the images for the viewer count against the memory budget: without room
// they are not kept (counted in recast3d_over_budget), the budget is never exceeded, and the
// viewer gets the images again once there is room.
// Waits until the budget's charge has not changed for a while: what was in flight (publications
// ZeroMQ still held, the bridge's copies) has left. False when it keeps changing for 20 s.
bool wait_until_settled(const SharedMemoryBudget& budget) {
  const auto quiet = std::chrono::milliseconds(test::scaled_ms(300));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::size_t used = budget->used_bytes();
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(quiet);
    const std::size_t now = budget->used_bytes();
    if (now == used) return true;
    used = now;
  }
  return false;
}

TEST(Recast3dRobustness, ImagesForTheViewerWithoutRoomInTheMemoryBudgetAreCountedNotKept) {
  TestViewer viewer("tcp://127.0.0.1:*", "tcp://127.0.0.1:*");
  BridgedScan bridged(viewer.requests_address(), viewer.updates_address());
  Server& server = bridged.server;
  TestAdapter& adapter = *bridged.adapter;
  const test::PhantomScan& scan = bridged.scan;
  ASSERT_TRUE(viewer.wait_for([&] { return viewer.images().size() == 3; }));
  std::size_t image_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(viewer.mutex());
    for (const auto& [id, image] : viewer.images())
      image_bytes = std::max(image_bytes, image.values.size() * sizeof(float));
  }
  server.wait_idle();
  const SharedMemoryBudget& budget = server.backend().host_memory();
  ASSERT_TRUE(wait_until_settled(budget));

  // The viewer's slices are client slices (SetSlice from the bridge): each holds the room of its
  // publications already. Less room than the bridge's packet of one image is left (the bridge
  // keeps the published image itself, under the image's charge, and charges the packet).
  auto others = budget->try_charge(budget->free_bytes() - image_bytes / 2);
  ASSERT_TRUE(others);
  std::uint64_t images_before = 0;
  {
    std::lock_guard<std::mutex> lock(viewer.mutex());  // the viewer's thread still counts packets
    images_before = viewer.received(tomop::PacketId::kSliceData);
  }
  adapter.send_projections(scan, kProjections, 10);
  server.wait_idle();
  EXPECT_TRUE(wait_until_settled(budget));
  EXPECT_GT(server.counters().at("recast3d_over_budget"), 0u);
  EXPECT_LE(budget->used_bytes(), budget->limit_bytes());
  EXPECT_GT(server.metrics().slices_published, 0u) << "the pipeline's own publications went on";

  // Room for the packet of an image but not for a copy of it besides: the bridge keeps the image
  // the pipeline published (under that image's charge), so images reach the viewer again.
  others.reset();
  ASSERT_TRUE(wait_until_settled(budget));
  others = budget->try_charge(budget->free_bytes() - image_bytes * 3 / 2);
  ASSERT_TRUE(others);
  adapter.send_projections(scan, kProjections + 10, 10);
  EXPECT_TRUE(viewer.wait_for([&] {
    return viewer.received(tomop::PacketId::kSliceData) > images_before;
  })) << "the viewer gets images again once there is room for their packets";
  EXPECT_LE(budget->used_bytes(), budget->limit_bytes());
}

}  // namespace
}  // namespace slicestream
