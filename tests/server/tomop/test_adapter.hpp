// A tomop adapter as the RECAST3D examples are written: a PUSH socket (or REQ, waiting for each
// answer) connected to the server's tomop data port, sending ScanSettings, GeometrySpecification,
// one geometry packet, darks, flats and Projection packets (float32 pixels, scene id 0).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "server/tomop/tomop_codec.hpp"
#include "tests/server/phantom_scan.hpp"

namespace slicestream::test {

class TestAdapter {
 public:
  explicit TestAdapter(const std::string& address, bool request_reply = false)
      : socket_(context_, request_reply ? zmq::socket_type::req : zmq::socket_type::push),
        request_reply_(request_reply) {
    socket_.set(zmq::sockopt::linger, 5000);
    socket_.connect(address);
  }

  // Sends raw bytes; with REQ returns the server's int32 answer (-1: none within 10 s).
  std::int32_t send_bytes(const std::vector<std::byte>& bytes) {
    socket_.send(zmq::buffer(bytes.data(), bytes.size()), zmq::send_flags::none);
    ++sent_;
    if (!request_reply_) return 1;
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::seconds(10));
    zmq::message_t reply;
    if ((item.revents & ZMQ_POLLIN) == 0 || !socket_.recv(reply) || reply.size() != 4) return -1;
    std::int32_t value;
    std::memcpy(&value, reply.data(), sizeof value);
    return value;
  }
  std::int32_t send(const tomop::Packet& packet) { return send_bytes(tomop::encode(packet)); }
  std::uint64_t sent() const { return sent_; }

  // The header of a phantom scan: settings (one dark, one flat), its box, parallel geometry.
  void send_scan_header(const PhantomScan& scan) {
    set_shape(scan.detector.rows, scan.detector.cols);
    send(tomop::ScanSettings{0, 1, 1, false, true});
    const Vec3 lo = scan.box.min_mm, hi = scan.box.max_mm;
    send(tomop::GeometrySpecification{
        0,
        {static_cast<float>(lo.x), static_cast<float>(lo.y), static_cast<float>(lo.z)},
        {static_cast<float>(hi.x), static_cast<float>(hi.y), static_cast<float>(hi.z)}});
    std::vector<float> angles;
    for (double a : scan.begin.parallel().angles_rad())
      angles.push_back(static_cast<float>(a));
    send(tomop::ParallelBeamGeometry{0, scan.detector.rows, scan.detector.cols,
                                     static_cast<std::int32_t>(angles.size()),
                                     tomop::FloatView::of(angles)});
    const std::vector<float> dark(scan.detector.pixels(), scan.dark);
    const std::vector<float> flat(scan.detector.pixels(), scan.flat);
    send(projection(tomop::Projection::kDark, 0, dark));
    send(projection(tomop::Projection::kFlat, 0, flat));
  }

  // Projections [first, first + count) with cyclic ids (slot = id mod N).
  void send_projections(const PhantomScan& scan, int first, int count) {
    for (int id = first; id < first + count; ++id) {
      const std::vector<std::uint16_t>& counts =
          scan.counts[static_cast<std::size_t>(id) % scan.counts.size()];
      const std::vector<float> values(counts.begin(), counts.end());
      send(projection(tomop::Projection::kStandard, id, values));
    }
  }

  tomop::Projection projection(std::int32_t type, std::int32_t id,
                               const std::vector<float>& values) const {
    return tomop::Projection{
        type, id, {current_rows_, current_cols_}, tomop::FloatView::of(values)};
  }
  void set_shape(int rows, int cols) {
    current_rows_ = rows;
    current_cols_ = cols;
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  bool request_reply_;
  std::uint64_t sent_ = 0;
  int current_rows_ = 0;
  int current_cols_ = 0;
};

}  // namespace slicestream::test
