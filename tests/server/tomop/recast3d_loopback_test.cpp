// The whole tomop path in one process: a test adapter streams an analytic phantom into the
// server's tomop data port, a test viewer (RECAST3D's side of the protocol) shows the slices the
// bridge sends; the same phantom also arrives over the native protocol while both viewers watch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "clients/common/data_sender.hpp"
#include "clients/common/request_client.hpp"
#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "server/tomop/recast3d_controls.hpp"
#include "server/tomop/recast3d_slice_geometry.hpp"
#include "tests/server/live_subscriber.hpp"
#include "tests/server/loopback_support.hpp"
#include "tests/server/phantom_scan.hpp"
#include "tests/server/tomop/test_adapter.hpp"
#include "tests/server/tomop/test_viewer.hpp"

namespace slicestream {
namespace {

using test::TestAdapter;
using test::TestViewer;

constexpr int kSliceSize = 64;
constexpr int kProjections = 90;
constexpr double kMaxRelativeError = 0.12;  // as for the native protocol (64-pixel detector)
const DetectorShape kDetector{16, 64};

ServerConfig tomop_config(const TestViewer* viewer) {
  ServerConfig config = test::loopback_config(kSliceSize);
  config.tomop.data = "tcp://127.0.0.1:*";
  if (viewer) {
    config.tomop.recast3d.requests = viewer->requests_address();
    config.tomop.recast3d.updates = viewer->updates_address();
    config.tomop.recast3d.slice_size = kSliceSize;
  }
  return config;
}

void wait_tomop_read(const Server& server, std::uint64_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (server.counters().at("tomop_packets") < count) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

SliceOrientation world(const tomop::Float9& normalized, const VolumeBox& box) {
  SliceOrientation o;
  o.values = normalized;
  return from_normalized(o, box);
}

double phantom_error(const test::PhantomScan& scan, const SliceOrientation& orientation,
                     const TestViewer::Image& image) {
  const std::vector<float> reference =
      phantom::sample(scan.phantom, slice_grid(orientation, image.width, image.height), 3);
  return test::relative_error(image.values, reference);
}

// Waits until the viewer shows slice `id` equal to the server's one-shot reconstruction of the same
// slice (the newest image has arrived), and returns it.
TestViewer::Image settled_image(TestViewer& viewer, client::RequestClient& requests,
                                std::int32_t id, const SliceOrientation& orientation) {
  TestViewer::Image image;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(viewer.mutex());
      const auto it = viewer.images().find(id);
      if (it != viewer.images().end()) image = it->second;
    }
    if (image.width > 0) {
      const client::Response got =
          requests.get_slice(orientation.values, static_cast<std::uint32_t>(image.width),
                             static_cast<std::uint32_t>(image.height));
      if (got.ok() && test::relative_error(image.values, got.values) < 1e-5) return image;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "the viewer never showed the server's slice " << id;
  return image;
}

TEST(Recast3dLoopback, TomopPhantomReachesTheViewerAsAccurateAsOverTheNativeProtocol) {
  TestViewer viewer("tcp://127.0.0.1:*", "tcp://127.0.0.1:*");
  Server server(tomop_config(&viewer), test::cpu_backend());
  server.start();
  test::LiveSubscriber native_viewer(server.slices_address());
  client::RequestClient requests(server.requests_address(), 10000);

  ASSERT_TRUE(viewer.wait_for([&] { return viewer.controls().size() == 5; }))
      << "the bridge made no scene or registered no controls";

  const test::PhantomScan scan = test::make_parallel_scan(1, kDetector, kProjections);
  TestAdapter adapter(server.tomop_data_address());
  adapter.send_scan_header(scan);
  adapter.send_projections(scan, 0, kProjections);
  wait_tomop_read(server, adapter.sent());
  server.wait_idle();
  EXPECT_EQ(server.metrics().projections_integrated, static_cast<std::uint64_t>(kProjections));

  // The viewer's three default slices, mapped to the scan's box (not a cube), at its size.
  for (std::int32_t id = 0; id < 3; ++id) {
    const SliceOrientation orientation = world(TestViewer::default_slice(id), scan.box);
    const TestViewer::Image image = settled_image(viewer, requests, id, orientation);
    const auto [width, height] = tomop::slice_pixels(orientation, kSliceSize);
    EXPECT_EQ(image.width, width);
    EXPECT_EQ(image.height, height);
    const double error = phantom_error(scan, orientation, image);
    std::printf("tomop slice %d (%d x %d): relative error %.4f\n", id, width, height, error);
    EXPECT_LT(error, kMaxRelativeError);
  }
  {
    std::lock_guard<std::mutex> lock(viewer.mutex());
    EXPECT_EQ(viewer.box_max(), (std::vector<float>{1, 1, 0.25f}));  // the box's proportions
  }

  // A drag: RemoveSlice(2), SetSlice(new id) off-centre; reconstructed from the whole window.
  const tomop::Float9 moved = {2, 0, 0, 0, 2, 0, -1, -1, 0.1f};
  const std::int32_t dragged = viewer.drag(2, moved);
  const SliceOrientation moved_world = world(moved, scan.box);
  const TestViewer::Image image = settled_image(viewer, requests, dragged, moved_world);
  std::printf(
      "dragged slice %d: first SliceData %.1f ms after the release\n", dragged,
      std::chrono::duration<double, std::milli>(image.arrived - viewer.drag_released()).count());
  const double tomop_error = phantom_error(scan, moved_world, image);
  EXPECT_LT(tomop_error, kMaxRelativeError);

  // The same phantom over the native protocol, while both viewers watch: same accuracy.
  test::PhantomScan native = test::make_parallel_scan(2, kDetector, kProjections);
  client::DataSender sender(server.data_address(), 1000);
  sender.send_scan_begin(native.begin);
  test::send_calibration(sender, native);
  test::send_projections(sender, native, 0, kProjections);
  test::wait_read(server, 2 + kProjections + 1);
  server.wait_idle();
  const TestViewer::Image after = settled_image(viewer, requests, dragged, moved_world);
  const double native_error = phantom_error(native, moved_world, after);
  std::printf("same slice: tomop %.5f, native %.5f relative error\n", tomop_error, native_error);
  EXPECT_NEAR(tomop_error, native_error, 1e-3);
  EXPECT_TRUE(native_viewer.wait_for([&] {
    return native_viewer.slices_locked().count(static_cast<std::uint32_t>(dragged)) > 0;
  })) << "the native viewer does not see the RECAST3D viewer's slice";

  // A control in the viewer changes the server's parameters (the path of SetParameters).
  viewer.publish(tomop::ParameterEnum{viewer.scene(), tomop::kFilterControl, {"hann"}});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  v1::FilterWindow filter = v1::FilterWindow();
  while (std::chrono::steady_clock::now() < deadline) {
    filter = requests.get_status().reply.status().parameters().filter();
    if (v1::FilterWindow_Name(filter).find("HANN") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(v1::FilterWindow_Name(filter).find("HANN"), std::string::npos);

  // "refine axial slice" switches CGLS refinement of the viewer's axial slice on.
  viewer.publish(tomop::ParameterBool{viewer.scene(), tomop::kRefineControl, true});
  bool refined = false;
  for (int i = 0; i < 500 && !refined; ++i) {
    const client::Response status = requests.get_status();
    for (const auto& r : status.reply.status().refinements())
      refined = refined || r.slice_id() == static_cast<std::uint32_t>(dragged);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(refined) << "no refinement of the viewer's axial slice " << dragged;

  std::lock_guard<std::mutex> lock(viewer.mutex());
  EXPECT_TRUE(viewer.violations().empty()) << viewer.violations().front();
  EXPECT_GE(viewer.received(tomop::PacketId::kVolumeData), 1u);
  EXPECT_EQ(viewer.volume_size(), (std::vector<std::int32_t>{24, 24, 24}));
  EXPECT_EQ(viewer.received(tomop::PacketId::kMakeScene), 1u);
}

}  // namespace
}  // namespace slicestream
