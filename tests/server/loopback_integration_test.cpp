// The loopback integration test: the real Server (in-process, CPU backend) on loopback sockets,
// a DataSender streaming a simulated phantom scan (raw uint16 counts with darks and flats), a
// SliceSubscriber and a RequestClient. Live slices and a one-shot GetSlice match the phantom in
// shape and absolute scale; every class of bad input sent over the wire is answered or counted
// (GetStatus discards) while the server stays alive; a following scan reconstructs correctly.
#include <gtest/gtest.h>

#include <cstdio>
#include <thread>

#include "clients/common/request_client.hpp"
#include "server/server.hpp"
#include "tests/server/live_subscriber.hpp"
#include "tests/server/loopback_support.hpp"
#include "tests/server/phantom_scan.hpp"

namespace slicestream {
namespace {

using client::Publication;
using client::RequestClient;
using test::cpu_backend;
using test::orientation_of;
using test::wait_read;

constexpr int kSliceSize = 64;
constexpr double kMaxRelativeError = 0.12;  // 64-pixel slices of a 64-column detector
constexpr double kMaxScaleError = 0.03;     // central mean vs the phantom's, relative

// Sends raw multipart messages (bad input a DataSender would never produce).
class RawPush {
 public:
  RawPush(zmq::context_t& context, const std::string& endpoint)
      : socket_(context, zmq::socket_type::push) {
    socket_.set(zmq::sockopt::linger, 2000);
    socket_.connect(endpoint);
  }
  void send(const std::vector<std::string>& parts) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      socket_.send(zmq::buffer(parts[i]),
                   i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    ++sent_;
  }
  std::uint64_t sent() const { return sent_; }

 private:
  zmq::socket_t socket_;
  std::uint64_t sent_ = 0;
};

std::string header(const v1::ScanBegin& scan) {
  v1::DataHeader h;
  h.set_protocol_version(1);
  *h.mutable_scan_begin() = scan;
  return h.SerializeAsString();
}

std::string header(const v1::Frame& frame) {
  v1::DataHeader h;
  h.set_protocol_version(1);
  *h.mutable_frame() = frame;
  return h.SerializeAsString();
}

std::string pixels(const std::vector<std::uint16_t>& counts) {
  return {reinterpret_cast<const char*>(counts.data()), counts.size() * 2};
}

// Compares an image on `orientation` with the phantom sampled on the same grid.
void expect_matches_phantom(const test::PhantomScan& scan, const SliceOrientation& orientation,
                            int width, int height, const std::vector<float>& values,
                            const std::string& what) {
  const std::vector<float> reference =
      phantom::sample(scan.phantom, slice_grid(orientation, width, height), 3);
  const double error = test::relative_error(values, reference);
  const double mean = test::centre_mean(values, width, height);
  const double reference_mean = test::centre_mean(reference, width, height);
  std::printf("%s: relative error %.4f, centre mean %.5f (phantom %.5f) per mm\n", what.c_str(),
              error, mean, reference_mean);
  EXPECT_LT(error, kMaxRelativeError) << what;
  EXPECT_NEAR(mean, reference_mean, kMaxScaleError * reference_mean) << what << ": absolute scale";
}

// Waits for the three default slices of `scan_id` with `projections` integrated and checks them.
void expect_live_slices(test::LiveSubscriber& live, const test::PhantomScan& scan,
                        std::uint64_t projections) {
  const std::uint64_t scan_id = scan.begin.scan_id();
  const bool arrived = live.wait_for([&] {
    int complete = 0;
    for (const auto& [id, publication] : live.slices_locked()) {
      const v1::SliceHeader& h = publication.header.slice();
      complete += h.scan_id() == scan_id && h.projections_integrated() == projections;
    }
    return complete >= 3;
  });
  ASSERT_TRUE(arrived) << "the final slices of scan " << scan_id << " were not published";
  for (std::uint32_t id = 0; id < 3; ++id) {
    const std::optional<Publication> slice = live.slice(id);
    ASSERT_TRUE(slice.has_value());
    const v1::SliceHeader& h = slice->header.slice();
    EXPECT_EQ(h.width(), static_cast<std::uint32_t>(kSliceSize));
    EXPECT_GE(h.published_ns(), h.arrival_ns());
    expect_matches_phantom(scan, orientation_of(h), static_cast<int>(h.width()),
                           static_cast<int>(h.height()), slice->values,
                           "scan " + std::to_string(scan_id) + " live slice " + std::to_string(id));
  }
}

TEST(LoopbackIntegration, PhantomScansOverTheWireWithBadInputInBetween) {
  Server server(test::loopback_config(kSliceSize), cpu_backend());
  server.start();
  test::LiveSubscriber live(server.slices_address());
  RequestClient requests(server.requests_address(), 20000);
  zmq::context_t context(1);
  RawPush raw(context, server.data_address());
  std::uint64_t expected_read = 0;

  // Until the subscription has reached the server nothing published is seen: probe with
  // garbage, whose error event proves the subscription (and counts as a discard).
  std::uint64_t probes = 0;
  while (!live.wait_for(
      [&] {
        for (const v1::Event& e : live.events_locked()) {
          if (e.reason() == "undecodable_header") return true;
        }
        return false;
      },
      std::chrono::milliseconds(100))) {
    raw.send({std::string(16, '\xff')});
    ASSERT_LT(++probes, 100u) << "no event ever reached the subscriber";
  }
  expected_read += probes;

  // ---- scan 1: cone beam, more than one rotation (the window slides).
  const test::PhantomScan cone = test::make_cone_scan(1, {48, 64}, 120, 150, 100);
  const std::uint32_t cone_projections = 160;
  expected_read += test::send_scan(server.data_address(), cone, cone_projections);
  wait_read(server, expected_read);
  server.wait_idle();
  expect_live_slices(live, cone, cone_projections);

  // A one-shot oblique slice from the window, through the requests endpoint.
  const VolumeBox& box = cone.box;
  const Vec3 e = box.extent();
  const SliceOrientation oblique = SliceOrientation::from_axes(
      {e.x, 0, 0}, {0, 0.7 * e.y, 0.7 * e.z}, {box.min_mm.x, -0.35 * e.y, -0.35 * e.z});
  client::Orientation values;
  std::copy(oblique.values.begin(), oblique.values.end(), values.begin());
  const client::Response got = requests.get_slice(values, 48, 40);
  ASSERT_TRUE(got.ok()) << got.reply.message();
  EXPECT_EQ(got.reply.slice().projections_integrated(), cone_projections);
  expect_matches_phantom(cone, oblique, 48, 40, got.values, "GetSlice oblique");

  const std::optional<Publication> preview = live.preview();
  ASSERT_TRUE(preview.has_value()) << "no preview volume was published";
  EXPECT_EQ(preview->header.preview().size_x(), 24u);
  EXPECT_EQ(preview->values.size(), 24u * 24u * 24u);

  // ---- bad input between the scans (the server must count each and stay alive).
  v1::ScanBegin nan_geometry = cone.begin;
  nan_geometry.mutable_cone()->set_angles_rad(7, std::nan(""));
  v1::ScanBegin too_big = cone.begin;
  too_big.set_detector_rows(5000);
  v1::DataHeader version_2;
  version_2.set_protocol_version(2);
  version_2.mutable_scan_end()->set_scan_id(1);
  v1::DataHeader no_body;
  no_body.set_protocol_version(1);
  const std::string cone_pixels = pixels(cone.counts[0]);
  v1::Frame untyped = test::frame_of(cone, v1::FRAME_KIND_PROJECTION, 0);
  untyped.set_pixel_type(v1::PIXEL_TYPE_UNSPECIFIED);
  const std::string full = header(cone.begin);
  raw.send({full.substr(0, full.size() / 2)});                             // truncated
  raw.send({header(test::frame_of(cone, v1::FRAME_KIND_PROJECTION, 0))});  // no payload
  raw.send({no_body.SerializeAsString()});                                 // unknown kind
  raw.send({version_2.SerializeAsString()});                               // version
  raw.send({header(nan_geometry)});                                        // NaN geometry
  raw.send({header(too_big)});                                             // oversized
  raw.send({header(test::frame_of(cone, v1::FRAME_KIND_PROJECTION, 0)), cone_pixels.substr(2)});
  raw.send({header(untyped), cone_pixels});  // pixel type
  raw.send({header(test::frame_of(cone, v1::FRAME_KIND_PROJECTION, 999)), cone_pixels});  // ended
  expected_read += 9;
  wait_read(server, expected_read);

  // ---- scan 2: parallel beam, with bad frames inside it.
  const test::PhantomScan parallel = test::make_parallel_scan(2, {48, 64}, 96);
  client::DataSender sender(server.data_address());
  sender.send_scan_begin(parallel.begin);
  test::send_calibration(sender, parallel);
  expected_read += 3;
  wait_read(server, expected_read);
  const std::string parallel_pixels = pixels(parallel.counts[0]);
  v1::Frame wrong_shape = test::frame_of(parallel, v1::FRAME_KIND_PROJECTION, 0);
  wrong_shape.set_rows(12);
  v1::Frame wrong_scan = test::frame_of(parallel, v1::FRAME_KIND_PROJECTION, 0);
  wrong_scan.set_scan_id(77);
  v1::Frame bad_position = test::frame_of(parallel, v1::FRAME_KIND_PROJECTION, 0);
  bad_position.set_position(96);
  raw.send({header(test::frame_of(parallel, v1::FRAME_KIND_DARK, 1)), parallel_pixels});
  raw.send({header(wrong_shape), parallel_pixels.substr(0, 12 * 64 * 2)});
  raw.send({header(wrong_scan), parallel_pixels});
  raw.send({header(bad_position), parallel_pixels});
  expected_read += 4;
  wait_read(server, expected_read);
  test::send_projections(sender, parallel, 0, 96);
  v1::ScanEnd end;
  end.set_scan_id(2);
  end.set_frames_sent(96);
  sender.send_scan_end(end);
  sender.close();
  expected_read += 97;
  wait_read(server, expected_read);
  server.wait_idle();
  expect_live_slices(live, parallel, 96);

  // ---- a garbage request gets an error reply; the server still answers.
  {
    zmq::socket_t dealer(context, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(server.requests_address());
    dealer.send(zmq::str_buffer("not a request"), zmq::send_flags::none);
    zmq::message_t reply;
    zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(5000));
    ASSERT_TRUE(item.revents & ZMQ_POLLIN) << "no reply to a garbage request";
    ASSERT_TRUE(dealer.recv(reply));
    v1::Reply parsed;
    ASSERT_TRUE(parsed.ParseFromArray(reply.data(), static_cast<int>(reply.size())));
    EXPECT_EQ(parsed.code(), v1::STATUS_CODE_INVALID_ARGUMENT);
    EXPECT_EQ(parsed.request_id(), 0u);
  }

  const client::Response status = requests.get_status();
  ASSERT_TRUE(status.ok()) << status.reply.message();
  const v1::StatusReport& report = status.reply.status();
  const std::map<std::string, std::uint64_t> discards(report.discards().begin(),
                                                      report.discards().end());
  const std::map<std::string, std::uint64_t> expected_discards{
      {"undecodable_header", probes + 1},
      {"bad_parts", 1},
      {"unknown_kind", 1},
      {"bad_protocol_version", 1},
      {"non_finite", 1},
      {"oversized", 1},
      {"bad_payload_size", 1},
      {"bad_pixel_type", 1},
      {"scan_ended", 1},
      {"index_out_of_range", 1},
      {"shape_mismatch", 1},
      {"wrong_scan_id", 1},
      {"position_out_of_range", 1},
  };
  EXPECT_EQ(discards, expected_discards);
  EXPECT_EQ(report.counters().at("projections_integrated"), cone_projections + 96u);
  EXPECT_EQ(report.counters().at("scans_started"), 2u);
  EXPECT_EQ(report.counters().at("scans_ended"), 2u);
  EXPECT_EQ(report.counters().at("requests_rejected"), 1u);
  EXPECT_EQ(report.counters().at("errors"), 0u);
  EXPECT_EQ(live.errors(), 0u) << "malformed publications";
  server.stop(/*drain=*/true);
}

}  // namespace
}  // namespace slicestream
