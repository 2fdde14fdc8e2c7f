#include "kernels/projection_map.hpp"

#include <cmath>

namespace slicestream {
namespace {

void set_coef(float* coef, Vec3 linear, double constant) {
  coef[0] = static_cast<float>(linear.x);
  coef[1] = static_cast<float>(linear.y);
  coef[2] = static_cast<float>(linear.z);
  coef[3] = static_cast<float>(constant);
}

double half_index(int count) { return 0.5 * count - 0.5; }

// Unit detector normal pointing from the source towards the detector, and the distances
// D (source to detector plane) and R (source to the rotation axis through the origin).
struct ConeFrame {
  Vec3 e;
  double source_detector;
  double source_axis;
  double sigma_area;  // (u x v) . e, signed area of one pixel
};

ConeFrame cone_frame(const ProjectionVector& vec) {
  const Vec3 n = cross(vec.u, vec.v);
  const double area = norm(n);
  const double sigma = dot(n, vec.detector_center - vec.source_or_ray) >= 0 ? 1.0 : -1.0;
  const Vec3 e = (sigma / area) * n;
  return {e, dot(e, vec.detector_center - vec.source_or_ray), dot(e, Vec3{} - vec.source_or_ray),
          sigma * area};
}

ProjectionMap cone_map(const ProjectionVector& vec, DetectorShape detector) {
  const ConeFrame f = cone_frame(vec);
  const Vec3 s = vec.source_or_ray;
  const Vec3 s_minus_d = s - vec.detector_center;
  const double scale = 1.0 / (f.sigma_area * f.source_axis);
  const Vec3 a = scale * cross(s_minus_d, vec.v);  // column numerator, per (X - s)
  const Vec3 b = scale * cross(vec.u, s_minus_d);  // row numerator, per (X - s)
  const Vec3 den = (1.0 / f.source_axis) * f.e;    // (X - s).e / R
  const double c0 = half_index(detector.cols);
  const double r0 = half_index(detector.rows);
  const Vec3 col = a + c0 * den;
  const Vec3 row = b + r0 * den;
  ProjectionMap map{};
  set_coef(map.col_coef, col, -dot(col, s));
  set_coef(map.row_coef, row, -dot(row, s));
  set_coef(map.den_coef, den, -dot(den, s));
  // Pixel width as seen at the rotation axis: |u| * R / D.
  map.weight = static_cast<float>(f.source_detector / (norm(vec.u) * f.source_axis));
  return map;
}

ProjectionMap parallel_map(const ProjectionVector& vec, DetectorShape detector) {
  const Vec3 r = vec.source_or_ray;
  const Vec3 v_cross_r = cross(vec.v, r);
  const double det = dot(vec.u, v_cross_r);
  const Vec3 col = (1.0 / det) * v_cross_r;
  const Vec3 row = (1.0 / det) * cross(r, vec.u);
  ProjectionMap map{};
  set_coef(map.col_coef, col, half_index(detector.cols) - dot(col, vec.detector_center));
  set_coef(map.row_coef, row, half_index(detector.rows) - dot(row, vec.detector_center));
  set_coef(map.den_coef, Vec3{}, 1.0);
  // The ramp filter acts across rays: use the pixel width perpendicular to the ray.
  const Vec3 r_hat = (1.0 / norm(r)) * r;
  const Vec3 u_perp = vec.u - dot(vec.u, r_hat) * r_hat;
  map.weight = static_cast<float>(1.0 / norm(u_perp));
  return map;
}

}  // namespace

ProjectionMap make_projection_map(BeamKind beam, const ProjectionVector& vector,
                                  DetectorShape detector) {
  return beam == BeamKind::kCone ? cone_map(vector, detector) : parallel_map(vector, detector);
}

std::vector<ProjectionMap> make_projection_maps(const ScanGeometry& geometry) {
  std::vector<ProjectionMap> maps;
  maps.reserve(geometry.vectors.size());
  for (const ProjectionVector& vec : geometry.vectors) {
    maps.push_back(make_projection_map(geometry.beam, vec, geometry.detector));
  }
  return maps;
}

CosineWeight make_cosine_weight(BeamKind beam, const ProjectionVector& vec, DetectorShape detector) {
  CosineWeight w{};
  w.enabled = beam == BeamKind::kCone;
  w.col_center = static_cast<float>(half_index(detector.cols));
  w.row_center = static_cast<float>(half_index(detector.rows));
  w.u = to_float3(vec.u);
  w.v = to_float3(vec.v);
  if (w.enabled) {
    const ConeFrame f = cone_frame(vec);
    w.source_to_center = to_float3(vec.detector_center - vec.source_or_ray);
    w.source_detector = static_cast<float>(f.source_detector);
  }
  return w;
}

}  // namespace slicestream
