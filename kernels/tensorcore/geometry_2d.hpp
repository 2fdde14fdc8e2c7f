// 2D fan- and parallel-beam geometry of one axial slice, in ASTRA's 2D vector convention
// (parallel_vec / fanflat_vec), and the square-pixel image grid it is projected onto.
//
// In a parallel-beam scan each detector row is an independent 2D problem; the central row of a
// circular cone-beam scan is a fan-beam one (slice_geometry_2d builds both from a ScanGeometry).
//
// Image: width x height pixels of pixel_mm, centred on the rotation axis (the world origin).
// Pixel (row, col) is centred at x = (col + 1/2 - width/2) * pixel_mm,
// y = (row + 1/2 - height/2) * pixel_mm; row 0 is the bottom (as GridSpec slices); values are
// row-major, column fastest. Detector bin b of a projection covers
// detector_center + [b - bins/2, b + 1 - bins/2] * u.
#pragma once

#include <string>
#include <vector>

#include "kernels/geometry.hpp"

namespace slicestream::tensorcore {

struct Vec2 {
  double x = 0, y = 0;
};
inline Vec2 operator+(Vec2 a, Vec2 b) {
  return {a.x + b.x, a.y + b.y};
}
inline Vec2 operator-(Vec2 a, Vec2 b) {
  return {a.x - b.x, a.y - b.y};
}
inline Vec2 operator*(double s, Vec2 a) {
  return {s * a.x, s * a.y};
}
inline double dot(Vec2 a, Vec2 b) {
  return a.x * b.x + a.y * b.y;
}
inline double cross(Vec2 a, Vec2 b) {
  return a.x * b.y - a.y * b.x;
}

struct ProjectionVector2d {
  Vec2 source_or_ray;  // fan: source position (mm); parallel: ray direction
  Vec2 detector_center;
  Vec2 u;  // from bin b to bin b + 1 (mm)
};

struct Geometry2d {
  BeamKind beam = BeamKind::kParallel;
  int bins = 0;
  std::vector<ProjectionVector2d> vectors;  // one per projection angle
  int angles() const { return static_cast<int>(vectors.size()); }
  long long rays() const { return static_cast<long long>(bins) * angles(); }
};

struct ImageGrid2d {
  int width = 0;
  int height = 0;
  double pixel_mm = 1;
  long long pixels() const { return static_cast<long long>(width) * height; }
};

// Angles as ASTRA's linspace(0, span, count, endpoint=False).
std::vector<double> uniform_angles(int count, double span_rad);

// ASTRA "parallel": ray (sin a, -cos a), u = bin_mm (cos a, sin a); the detector centre moves by
// detector_offset_mm along u.
Geometry2d make_parallel_2d(const std::vector<double>& angles_rad, int bins, double bin_mm,
                            double detector_offset_mm = 0);
// ASTRA "fanflat": source at source_origin_mm (sin a, -cos a), detector centre at
// origin_detector_mm (-sin a, cos a) (+ offset along u), u = bin_mm (cos a, sin a).
Geometry2d make_fan_2d(const std::vector<double>& angles_rad, int bins, double bin_mm,
                       double source_origin_mm, double origin_detector_mm,
                       double detector_offset_mm = 0);

// Detector row `row` of a 3D scan as a 2D problem in the plane z = that row's height: every row
// of a parallel-beam scan whose rays lie in planes z = const; the row through the source plane
// of a cone-beam scan (a fan beam). `row` is continuous (pixel centres at integers, 0 .. rows - 1):
// between two rows the 2D detector lies between them, which is what linear interpolation of their
// values measures. Throws std::invalid_argument naming the problem otherwise.
Geometry2d slice_geometry_2d(const ScanGeometry& geometry, double row);

// Empty when valid, else the first problem: bins, finite numbers, zero u or ray, a ray parallel
// to the detector, a source on the detector line.
std::string validate_geometry_2d(const Geometry2d& geometry);
std::string validate_grid_2d(const ImageGrid2d& grid);

// Offset (mm, along u) of the point where the ray through the rotation axis meets the detector,
// from the detector centre; zero for a centred detector. Used by the symmetry checks.
double axis_offset_mm(const Geometry2d& geometry, int projection);

}  // namespace slicestream::tensorcore
