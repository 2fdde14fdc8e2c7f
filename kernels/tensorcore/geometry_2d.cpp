#include "kernels/tensorcore/geometry_2d.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace slicestream::tensorcore {

namespace {

bool finite(Vec2 a) {
  return std::isfinite(a.x) && std::isfinite(a.y);
}
double length(Vec2 a) {
  return std::sqrt(dot(a, a));
}

std::string vector_problem(BeamKind beam, const ProjectionVector2d& vec) {
  if (!finite(vec.source_or_ray) || !finite(vec.detector_center) || !finite(vec.u)) {
    return "contains a non-finite number";
  }
  const double u_len = length(vec.u);
  if (u_len <= 0) return "has a zero bin vector u";
  if (beam == BeamKind::kParallel) {
    const double r_len = length(vec.source_or_ray);
    if (r_len <= 0) return "has a zero ray direction";
    if (std::abs(cross(vec.u, vec.source_or_ray)) <= 1e-6 * u_len * r_len) {
      return "has a ray direction parallel to the detector";
    }
  } else {
    const Vec2 to_center = vec.detector_center - vec.source_or_ray;
    if (std::abs(cross(vec.u, to_center)) <= 1e-9 * u_len * (length(to_center) + 1)) {
      return "has its source on the detector line";
    }
  }
  return {};
}

}  // namespace

std::vector<double> uniform_angles(int count, double span_rad) {
  std::vector<double> angles(static_cast<std::size_t>(count > 0 ? count : 0));
  for (int i = 0; i < count; ++i)
    angles[static_cast<std::size_t>(i)] = span_rad * i / count;
  return angles;
}

Geometry2d make_parallel_2d(const std::vector<double>& angles_rad, int bins, double bin_mm,
                            double detector_offset_mm) {
  Geometry2d g{BeamKind::kParallel, bins, {}};
  g.vectors.reserve(angles_rad.size());
  for (double a : angles_rad) {
    const double s = std::sin(a);
    const double c = std::cos(a);
    const Vec2 u_hat{c, s};
    g.vectors.push_back({{s, -c}, detector_offset_mm * u_hat, bin_mm * u_hat});
  }
  return g;
}

Geometry2d make_fan_2d(const std::vector<double>& angles_rad, int bins, double bin_mm,
                       double source_origin_mm, double origin_detector_mm,
                       double detector_offset_mm) {
  Geometry2d g{BeamKind::kCone, bins, {}};
  g.vectors.reserve(angles_rad.size());
  for (double a : angles_rad) {
    const double s = std::sin(a);
    const double c = std::cos(a);
    const Vec2 u_hat{c, s};
    g.vectors.push_back({source_origin_mm * Vec2{s, -c},
                         origin_detector_mm * Vec2{-s, c} + detector_offset_mm * u_hat,
                         bin_mm * u_hat});
  }
  return g;
}

Geometry2d slice_geometry_2d(const ScanGeometry& geometry, double row) {
  const std::string problem = validate_geometry(geometry);
  if (!problem.empty()) throw std::invalid_argument("slice_geometry_2d: " + problem);
  if (!(row >= 0 && row <= geometry.detector.rows - 1)) {
    throw std::invalid_argument("slice_geometry_2d: detector row out of range");
  }
  Geometry2d g{geometry.beam, geometry.detector.cols, {}};
  const double row_offset = row + 0.5 - geometry.detector.rows / 2.0;
  for (std::size_t i = 0; i < geometry.vectors.size(); ++i) {
    const ProjectionVector& v = geometry.vectors[i];
    const Vec3 row_center = v.detector_center + row_offset * v.v;
    const double scale = norm(v.u) + norm(v.v) + norm(row_center) + 1;
    const double tolerance = 1e-9 * scale;
    std::ostringstream error;
    if (std::abs(v.u.z) > tolerance) {
      error << "projection " << i << ": detector rows are not horizontal (u has a z component)";
    } else if (geometry.beam == BeamKind::kParallel &&
               std::abs(v.source_or_ray.z) > 1e-9 * norm(v.source_or_ray)) {
      error << "projection " << i << ": parallel rays leave the z = const planes";
    } else if (geometry.beam == BeamKind::kCone &&
               std::abs(v.source_or_ray.z - row_center.z) > tolerance) {
      error << "projection " << i << ": row " << row
            << " is not in the source plane, so it is not a fan-beam problem";
    } else if (std::abs(row_center.z - (v.detector_center.z + row_offset * v.v.z)) > tolerance) {
      error << "projection " << i << ": inconsistent row height";
    }
    if (!error.str().empty()) throw std::invalid_argument("slice_geometry_2d: " + error.str());
    g.vectors.push_back(
        {{v.source_or_ray.x, v.source_or_ray.y}, {row_center.x, row_center.y}, {v.u.x, v.u.y}});
  }
  return g;
}

std::string validate_geometry_2d(const Geometry2d& geometry) {
  if (geometry.bins <= 0) return "geometry needs at least one detector bin";
  if (geometry.vectors.empty()) return "geometry has no projections";
  for (std::size_t i = 0; i < geometry.vectors.size(); ++i) {
    const std::string problem = vector_problem(geometry.beam, geometry.vectors[i]);
    if (!problem.empty()) {
      std::ostringstream out;
      out << "projection " << i << " " << problem;
      return out.str();
    }
  }
  return {};
}

std::string validate_grid_2d(const ImageGrid2d& grid) {
  if (grid.width <= 0 || grid.height <= 0) return "image grid needs positive width and height";
  if (!(grid.pixel_mm > 0) || !std::isfinite(grid.pixel_mm)) {
    return "image grid needs a positive, finite pixel size";
  }
  return {};
}

double axis_offset_mm(const Geometry2d& geometry, int projection) {
  const ProjectionVector2d& v = geometry.vectors[static_cast<std::size_t>(projection)];
  const Vec2 u_hat = (1 / std::sqrt(dot(v.u, v.u))) * v.u;
  // Where the ray through the origin meets the detector line d + t * u_hat: solve
  // origin + s * dir = d + t * u_hat for t.
  const Vec2 dir =
      geometry.beam == BeamKind::kParallel ? v.source_or_ray : Vec2{} - v.source_or_ray;
  const Vec2 start = geometry.beam == BeamKind::kParallel ? Vec2{} : v.source_or_ray;
  // start + s * dir = d + t * u_hat  =>  t = cross(start - d, dir) / cross(u_hat, dir)
  return cross(start - v.detector_center, dir) / cross(u_hat, dir);
}

}  // namespace slicestream::tensorcore
