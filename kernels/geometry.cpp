#include "kernels/geometry.hpp"

#include <cmath>
#include <sstream>

namespace slicestream {

const char* to_string(BeamKind beam) {
  return beam == BeamKind::kCone ? "cone" : "parallel";
}

const char* to_string(PixelType type) {
  switch (type) {
    case PixelType::kUint16:
      return "uint16";
    case PixelType::kUint32:
      return "uint32";
    case PixelType::kFloat32:
      return "float32";
  }
  return "unknown";
}

const char* to_string(FrameKind kind) {
  switch (kind) {
    case FrameKind::kDark:
      return "dark";
    case FrameKind::kFlat:
      return "flat";
    case FrameKind::kProjection:
      return "projection";
  }
  return "unknown";
}

ProjectionVector parallel_vector(double angle_rad, double pixel_width_mm, double pixel_height_mm) {
  const double s = std::sin(angle_rad);
  const double c = std::cos(angle_rad);
  return {
      {s, -c, 0}, {0, 0, 0}, {c * pixel_width_mm, s * pixel_width_mm, 0}, {0, 0, pixel_height_mm}};
}

ProjectionVector cone_vector(double angle_rad, const CircularConeParams& p) {
  const double s = std::sin(angle_rad);
  const double c = std::cos(angle_rad);
  ProjectionVector vec{{s * p.source_origin_mm, -c * p.source_origin_mm, 0},
                       {-s * p.origin_detector_mm, c * p.origin_detector_mm, 0},
                       {c * p.pixel_width_mm, s * p.pixel_width_mm, 0},
                       {0, 0, p.pixel_height_mm}};
  // Offsets move the detector within its own plane, along the unit u and v directions.
  const Vec3 u_hat{c, s, 0};
  vec.detector_center =
      vec.detector_center + p.detector_offset_u_mm * u_hat + Vec3{0, 0, p.detector_offset_v_mm};
  return vec;
}

ScanGeometry make_parallel_geometry(DetectorShape detector, const CircularParallelParams& params) {
  ScanGeometry g{BeamKind::kParallel, detector, {}};
  g.vectors.reserve(params.angles_rad.size());
  for (double a : params.angles_rad) {
    g.vectors.push_back(parallel_vector(a, params.pixel_width_mm, params.pixel_height_mm));
  }
  return g;
}

ScanGeometry make_cone_geometry(DetectorShape detector, const CircularConeParams& params) {
  ScanGeometry g{BeamKind::kCone, detector, {}};
  g.vectors.reserve(params.angles_rad.size());
  for (double a : params.angles_rad)
    g.vectors.push_back(cone_vector(a, params));
  return g;
}

ScanGeometry make_vector_geometry(BeamKind beam, DetectorShape detector,
                                  const std::vector<double>& values) {
  ScanGeometry g{beam, detector, {}};
  const std::size_t count = values.size() / 12;
  g.vectors.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const double* q = &values[12 * i];
    g.vectors.push_back(
        {{q[0], q[1], q[2]}, {q[3], q[4], q[5]}, {q[6], q[7], q[8]}, {q[9], q[10], q[11]}});
  }
  return g;
}

ScanGeometry with_rotation_axis_offset(const ScanGeometry& geometry, double offset_px) {
  ScanGeometry shifted = geometry;
  for (ProjectionVector& vec : shifted.vectors) {
    vec.detector_center = vec.detector_center - offset_px * vec.u;
  }
  return shifted;
}

namespace {

std::string vector_problem(BeamKind beam, const ProjectionVector& vec) {
  if (!is_finite(vec.source_or_ray) || !is_finite(vec.detector_center) || !is_finite(vec.u) ||
      !is_finite(vec.v)) {
    return "contains a non-finite number";
  }
  const double u_len = norm(vec.u);
  const double v_len = norm(vec.v);
  if (u_len <= 0 || v_len <= 0) return "has a zero-length pixel vector u or v";
  const Vec3 normal = cross(vec.u, vec.v);
  const double area = norm(normal);
  if (area <= 1e-9 * u_len * v_len) return "has parallel pixel vectors u and v";
  if (beam == BeamKind::kParallel) {
    const double r_len = norm(vec.source_or_ray);
    if (r_len <= 0) return "has a zero ray direction";
    if (std::abs(dot(normal, vec.source_or_ray)) <= 1e-6 * area * r_len) {
      return "has a ray direction parallel to the detector plane";
    }
  } else {
    const Vec3 to_detector = vec.detector_center - vec.source_or_ray;
    const double distance = dot(normal, to_detector) / area;
    if (std::abs(distance) <= 1e-9 * (norm(to_detector) + 1)) {
      return "has its source in the detector plane";
    }
    // R, the source to rotation-axis distance along the detector normal, must be positive.
    const double axis_distance = dot(normal, Vec3{} - vec.source_or_ray) / area;
    if (axis_distance * distance <= 0) {
      return "has the rotation axis (world origin) not between source and detector";
    }
  }
  return {};
}

}  // namespace

std::string describe_box(const VolumeBox& box) {
  std::ostringstream text;
  text << "[" << box.min_mm.x << ", " << box.max_mm.x << "] x [" << box.min_mm.y << ", "
       << box.max_mm.y << "] x [" << box.min_mm.z << ", " << box.max_mm.z << "] mm";
  return text.str();
}

std::string validate_geometry(const ScanGeometry& geometry) {
  if (geometry.detector.rows <= 0 || geometry.detector.cols <= 0) {
    return "detector must have at least one row and one column";
  }
  if (geometry.vectors.empty()) return "geometry has no projections";
  for (std::size_t i = 0; i < geometry.vectors.size(); ++i) {
    std::string problem = vector_problem(geometry.beam, geometry.vectors[i]);
    if (!problem.empty()) {
      std::ostringstream out;
      out << "projection " << i << " " << problem;
      return out.str();
    }
  }
  return {};
}

}  // namespace slicestream
