// A simulated scan of an analytic ellipsoid phantom as a detector would send it
// (slicestream.v1 messages, raw uint16 counts with darks and flats), and the reference values to
// compare reconstructions with.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "clients/common/data_sender.hpp"
#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "slicestream.pb.h"

namespace slicestream::test {

struct PhantomScan {
  v1::ScanBegin begin;
  VolumeBox box;
  DetectorShape detector;
  std::vector<phantom::Ellipsoid> phantom;
  std::vector<std::vector<std::uint16_t>> counts;  // raw frame of every slot of the rotation
  std::uint16_t dark = 100;
  std::uint16_t flat = 40000;
};

// A smooth, low-contrast phantom filling `box` (sharp thin shells would measure the resolution
// of a 64-pixel detector rather than the server).
inline std::vector<phantom::Ellipsoid> smooth_phantom(const VolumeBox& box) {
  const Vec3 c = box.center();
  const Vec3 h = 0.5 * box.extent();
  auto at = [&](double x, double y, double z) { return c + Vec3{x * h.x, y * h.y, z * h.z}; };
  auto axes = [&](double x, double y, double z) { return Vec3{x * h.x, y * h.y, z * h.z}; };
  return {
      {at(0, 0, 0), axes(0.75, 0.65, 0.7), 0, 0, 0, 0.010},
      {at(0.3, 0.1, 0.05), axes(0.25, 0.2, 0.35), 0, 0, 0, 0.010},
      {at(-0.25, -0.2, 0.1), axes(0.2, 0.3, 0.3), 0.5, 0, 0, -0.005},
  };
}

inline std::vector<double> even_angles(int count, double range_rad) {
  std::vector<double> angles;
  for (int i = 0; i < count; ++i)
    angles.push_back(range_rad * i / count);
  return angles;
}

inline void finish(PhantomScan& scan, const ScanGeometry& geometry, BeamKind beam) {
  const Vec3 lo = scan.box.min_mm, hi = scan.box.max_mm;
  v1::VolumeBox* volume = scan.begin.mutable_volume();
  volume->mutable_min_mm()->set_x(lo.x);
  volume->mutable_min_mm()->set_y(lo.y);
  volume->mutable_min_mm()->set_z(lo.z);
  volume->mutable_max_mm()->set_x(hi.x);
  volume->mutable_max_mm()->set_y(hi.y);
  volume->mutable_max_mm()->set_z(hi.z);
  scan.begin.set_detector_rows(static_cast<std::uint32_t>(scan.detector.rows));
  scan.begin.set_detector_cols(static_cast<std::uint32_t>(scan.detector.cols));
  scan.begin.set_pixel_type(v1::PIXEL_TYPE_UINT16);
  scan.begin.set_projections_per_rotation(static_cast<std::uint32_t>(geometry.vectors.size()));
  std::vector<float> line_integrals(scan.detector.pixels());
  for (const ProjectionVector& vector : geometry.vectors) {
    phantom::project(scan.phantom, beam, vector, scan.detector, line_integrals.data(), 2);
    std::vector<std::uint16_t> counts(line_integrals.size());
    for (std::size_t i = 0; i < counts.size(); ++i) {
      const double value = scan.dark + (scan.flat - scan.dark) * std::exp(-line_integrals[i]);
      counts[i] = static_cast<std::uint16_t>(std::lround(value));
    }
    scan.counts.push_back(std::move(counts));
  }
}

// Circular cone beam over 360 degrees; the box is the field of view at the axis.
inline PhantomScan make_cone_scan(std::uint64_t scan_id, DetectorShape detector, int projections,
                                  double source_origin_mm, double origin_detector_mm) {
  PhantomScan scan;
  scan.detector = detector;
  scan.begin.set_scan_id(scan_id);
  scan.begin.set_pixel_width_mm(1);
  scan.begin.set_pixel_height_mm(1);
  scan.begin.set_dark_count(2);
  scan.begin.set_flat_count(2);
  CircularConeParams params;
  params.angles_rad = even_angles(projections, 2 * M_PI);
  params.source_origin_mm = source_origin_mm;
  params.origin_detector_mm = origin_detector_mm;
  v1::ConeBeamGeometry* cone = scan.begin.mutable_cone();
  for (double a : params.angles_rad)
    cone->add_angles_rad(a);
  cone->set_source_origin_mm(source_origin_mm);
  cone->set_origin_detector_mm(origin_detector_mm);
  const double magnification = (source_origin_mm + origin_detector_mm) / source_origin_mm;
  const double half_width = 0.5 * detector.cols / magnification;
  const double half_height = 0.5 * detector.rows / magnification;
  scan.box = {{-half_width, -half_width, -half_height}, {half_width, half_width, half_height}};
  const double r = 0.8 * half_width;
  scan.phantom = smooth_phantom({{-r, -r, -0.8 * half_height}, {r, r, 0.8 * half_height}});
  finish(scan, make_cone_geometry(detector, params), BeamKind::kCone);
  return scan;
}

// Parallel beam over 180 degrees with 1 mm pixels; the box spans the detector.
inline PhantomScan make_parallel_scan(std::uint64_t scan_id, DetectorShape detector,
                                      int projections) {
  PhantomScan scan;
  scan.detector = detector;
  scan.begin.set_scan_id(scan_id);
  scan.begin.set_pixel_width_mm(1);
  scan.begin.set_pixel_height_mm(1);
  scan.begin.set_dark_count(1);
  scan.begin.set_flat_count(1);
  CircularParallelParams params{even_angles(projections, M_PI), 1, 1};
  for (double a : params.angles_rad)
    scan.begin.mutable_parallel()->add_angles_rad(a);
  const double half_width = 0.5 * detector.cols;
  const double half_height = 0.5 * detector.rows;
  scan.box = {{-half_width, -half_width, -half_height}, {half_width, half_width, half_height}};
  const double r = half_width / std::sqrt(2.0);
  scan.phantom = smooth_phantom({{-r, -r, -0.8 * half_height}, {r, r, 0.8 * half_height}});
  finish(scan, make_parallel_geometry(detector, params), BeamKind::kParallel);
  return scan;
}

inline v1::Frame frame_of(const PhantomScan& scan, v1::FrameKind kind, std::uint32_t index) {
  v1::Frame frame;
  frame.set_scan_id(scan.begin.scan_id());
  frame.set_kind(kind);
  frame.set_index(index);
  frame.set_rows(static_cast<std::uint32_t>(scan.detector.rows));
  frame.set_cols(static_cast<std::uint32_t>(scan.detector.cols));
  frame.set_pixel_type(v1::PIXEL_TYPE_UINT16);
  frame.set_timestamp_ns(1000 + index);
  return frame;
}

// Darks and flats as declared in the ScanBegin.
inline void send_calibration(client::DataSender& sender, const PhantomScan& scan) {
  for (std::uint32_t i = 0; i < scan.begin.dark_count(); ++i) {
    const std::vector<std::uint16_t> dark(scan.detector.pixels(), scan.dark);
    sender.send_frame(frame_of(scan, v1::FRAME_KIND_DARK, i), dark.data(), dark.size() * 2);
  }
  for (std::uint32_t i = 0; i < scan.begin.flat_count(); ++i) {
    const std::vector<std::uint16_t> flat(scan.detector.pixels(), scan.flat);
    sender.send_frame(frame_of(scan, v1::FRAME_KIND_FLAT, i), flat.data(), flat.size() * 2);
  }
}

// Projections [first, first + count): slot = index % N (continuous rotation).
inline void send_projections(client::DataSender& sender, const PhantomScan& scan,
                             std::uint32_t first, std::uint32_t count) {
  for (std::uint32_t index = first; index < first + count; ++index) {
    const std::vector<std::uint16_t>& counts = scan.counts[index % scan.counts.size()];
    sender.send_frame(frame_of(scan, v1::FRAME_KIND_PROJECTION, index), counts.data(),
                      counts.size() * 2);
  }
}

// A whole scan from one connection: ScanBegin, darks and flats, projections [0, count), ScanEnd.
// Returns the messages sent.
inline std::uint64_t send_scan(const std::string& data_endpoint, const PhantomScan& scan,
                               std::uint32_t count) {
  client::DataSender sender(data_endpoint);
  sender.send_scan_begin(scan.begin);
  send_calibration(sender, scan);
  send_projections(sender, scan, 0, count);
  v1::ScanEnd end;
  end.set_scan_id(scan.begin.scan_id());
  end.set_frames_sent(count);
  sender.send_scan_end(end);
  sender.close();
  return 1 + scan.begin.dark_count() + scan.begin.flat_count() + count + 1;
}

inline double relative_error(const std::vector<float>& values,
                             const std::vector<float>& reference) {
  if (values.size() != reference.size()) return 1e30;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double d = static_cast<double>(values[i]) - reference[i];
    diff += d * d;
    norm += static_cast<double>(reference[i]) * reference[i];
  }
  return std::sqrt(diff / norm);
}

// Mean over the middle quarter of the image's area: the absolute scale away from edges.
inline double centre_mean(const std::vector<float>& values, int width, int height) {
  double sum = 0;
  int count = 0;
  for (int j = height * 3 / 8; j < height * 5 / 8; ++j) {
    for (int i = width * 3 / 8; i < width * 5 / 8; ++i) {
      sum += values[static_cast<std::size_t>(j) * static_cast<std::size_t>(width) +
                    static_cast<std::size_t>(i)];
      ++count;
    }
  }
  return sum / count;
}

}  // namespace slicestream::test
