// Builders of valid slicestream.v1 messages with random content, for the server tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "slicestream.pb.h"

namespace slicestream::test {

// A generator whose seed is reported by the test that uses it (SCOPED_TRACE(seed)).
struct Random {
  std::uint32_t seed = std::random_device{}();
  std::mt19937 engine{seed};
  double uniform(double low, double high) {
    return std::uniform_real_distribution<double>(low, high)(engine);
  }
  std::uint32_t integer(std::uint32_t low, std::uint32_t high) {
    return std::uniform_int_distribution<std::uint32_t>(low, high)(engine);
  }
};

inline v1::VolumeBox random_box(Random& random) {
  v1::VolumeBox box;
  box.mutable_min_mm()->set_x(-random.uniform(5, 20));
  box.mutable_min_mm()->set_y(-random.uniform(5, 20));
  box.mutable_min_mm()->set_z(-random.uniform(5, 20));
  box.mutable_max_mm()->set_x(random.uniform(5, 20));
  box.mutable_max_mm()->set_y(random.uniform(5, 20));
  box.mutable_max_mm()->set_z(random.uniform(5, 20));
  return box;
}

enum class GeometryKind { kParallel, kCone, kVectors };

inline v1::ScanBegin random_scan_begin(Random& random, GeometryKind kind,
                                       std::uint32_t projections = 12) {
  v1::ScanBegin scan;
  scan.set_scan_id(random.integer(1, 1u << 30));
  scan.set_detector_rows(random.integer(4, 40));
  scan.set_detector_cols(random.integer(4, 40));
  scan.set_pixel_width_mm(random.uniform(0.1, 1));
  scan.set_pixel_height_mm(random.uniform(0.1, 1));
  scan.set_pixel_type(v1::PIXEL_TYPE_UINT16);
  scan.set_dark_count(random.integer(0, 5));
  scan.set_flat_count(random.integer(1, 5));
  scan.set_projections_per_rotation(projections);
  *scan.mutable_volume() = random_box(random);
  scan.set_description("random scan");
  const double offset = random.uniform(-0.5, 0.5);
  switch (kind) {
    case GeometryKind::kParallel:
      for (std::uint32_t i = 0; i < projections; ++i) {
        scan.mutable_parallel()->add_angles_rad(offset + M_PI * i / projections);
      }
      break;
    case GeometryKind::kCone: {
      v1::ConeBeamGeometry* cone = scan.mutable_cone();
      for (std::uint32_t i = 0; i < projections; ++i) {
        cone->add_angles_rad(offset + 2 * M_PI * i / projections);
      }
      cone->set_source_origin_mm(random.uniform(100, 300));
      cone->set_origin_detector_mm(random.uniform(50, 200));
      cone->set_detector_offset_u_mm(random.uniform(-2, 2));
      cone->set_detector_offset_v_mm(random.uniform(-2, 2));
      break;
    }
    case GeometryKind::kVectors: {
      v1::VectorGeometry* vectors = scan.mutable_vectors();
      vectors->set_cone(true);
      for (std::uint32_t i = 0; i < projections; ++i) {
        const double a = offset + 2 * M_PI * i / projections;
        const double s = std::sin(a), c = std::cos(a);
        const double sod = random.uniform(100, 300), odd = random.uniform(50, 200);
        const double values[12] = {s * sod, -c * sod, 0, -s * odd, c * odd, 0,
                                   c * 0.5, s * 0.5,  0, 0,        0,       0.5};
        for (double v : values)
          vectors->add_vectors(v);
      }
      break;
    }
  }
  return scan;
}

inline std::string header_bytes(const v1::ScanBegin& scan) {
  v1::DataHeader header;
  header.set_protocol_version(1);
  *header.mutable_scan_begin() = scan;
  return header.SerializeAsString();
}

inline v1::Frame frame_header(std::uint64_t scan_id, std::uint32_t rows, std::uint32_t cols,
                              v1::PixelType type = v1::PIXEL_TYPE_UINT16,
                              v1::FrameKind kind = v1::FRAME_KIND_PROJECTION,
                              std::uint32_t index = 0) {
  v1::Frame frame;
  frame.set_scan_id(scan_id);
  frame.set_kind(kind);
  frame.set_index(index);
  frame.set_rows(rows);
  frame.set_cols(cols);
  frame.set_pixel_type(type);
  frame.set_timestamp_ns(123456789);
  return frame;
}

inline std::string header_bytes(const v1::Frame& frame) {
  v1::DataHeader header;
  header.set_protocol_version(1);
  *header.mutable_frame() = frame;
  return header.SerializeAsString();
}

inline zmq::message_t part(const std::string& bytes) {
  return zmq::message_t(bytes.data(), bytes.size());
}

}  // namespace slicestream::test
