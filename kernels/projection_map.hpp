// Per-projection coefficients that map a world point X (mm) to detector coordinates, shared by
// the CPU and CUDA backprojectors (docs/geometry.md derives them).
//
//   den = dot(den_coef, (X, 1))         cone: (X - s).e / R, the magnification relative to the
//                                       rotation axis; parallel: exactly 1
//   col = dot(col_coef, (X, 1)) / den   continuous column index, pixel centres at integers
//   row = dot(row_coef, (X, 1)) / den   continuous row index
//   contribution = weight * bilinear(projection, col, row) / den^2     (FDK distance weighting)
//
// `weight` is 1 / (detector pixel width at the rotation axis), the ramp filter's physical scale,
// so that the filter itself works in pixel units.
#pragma once

#include <cmath>
#include <vector>

#include "kernels/geometry.hpp"
#include "kernels/host_device.hpp"

namespace slicestream {

struct ProjectionMap {
  float col_coef[4];
  float row_coef[4];
  float den_coef[4];
  float weight;
};

// The rotation axis passes through the world origin (cone beam: R is measured to it).
ProjectionMap make_projection_map(BeamKind beam, const ProjectionVector& vector,
                                  DetectorShape detector);
std::vector<ProjectionMap> make_projection_maps(const ScanGeometry& geometry);

// FDK cosine pre-weight D / |P - s| of detector pixel P (D: source to detector plane), evaluated
// inline by the fused preprocessing pass on CPU and GPU; `enabled` is false for parallel beam.
struct CosineWeight {
  Float3 source_to_center;  // d - s
  Float3 u;
  Float3 v;
  float source_detector;  // D
  float col_center;       // cols / 2 - 1/2
  float row_center;       // rows / 2 - 1/2
  bool enabled;

  SLICESTREAM_INLINE float at(int row, int col) const {
    if (!enabled) return 1.0f;
    const float dc = static_cast<float>(col) - col_center;
    const float dr = static_cast<float>(row) - row_center;
    const float x = source_to_center.x + dc * u.x + dr * v.x;
    const float y = source_to_center.y + dc * u.y + dr * v.y;
    const float z = source_to_center.z + dc * u.z + dr * v.z;
    return source_detector / sqrtf(x * x + y * y + z * z);
  }
};

CosineWeight make_cosine_weight(BeamKind beam, const ProjectionVector& vector,
                                DetectorShape detector);

// Angular weight pi / N for a window of N projections covering 180 or 360 degrees (each line is
// measured once per 180 degrees); see docs/geometry.md.
inline float angular_weight(int window_projections) {
  return 3.14159265358979323846f / static_cast<float>(window_projections);
}

}  // namespace slicestream
