// Scan geometry in ASTRA's vector convention (docs/geometry.md).
//
// One ProjectionVector per angular position of the rotation ("slot"):
//   cone beam     (ASTRA cone_vec):       source position s, detector centre d, pixel steps u, v
//   parallel beam (ASTRA parallel3d_vec): ray direction r,   detector centre d, pixel steps u, v
// u points from detector pixel (r, c) to (r, c + 1) and v from (r, c) to (r + 1, c), both in mm.
// The centre of pixel (row, col) is d + (col - cols/2 + 1/2) u + (row - rows/2 + 1/2) v.
#pragma once

#include <string>
#include <vector>

#include "kernels/frame_view.hpp"
#include "kernels/vec3.hpp"

namespace slicestream {

enum class BeamKind { kParallel, kCone };
const char* to_string(BeamKind beam);

struct ProjectionVector {
  Vec3 source_or_ray;  // cone: source position (mm); parallel: ray direction
  Vec3 detector_center;
  Vec3 u;
  Vec3 v;
};

struct ScanGeometry {
  BeamKind beam = BeamKind::kParallel;
  DetectorShape detector;
  std::vector<ProjectionVector> vectors;  // one per slot of the rotation
};

// Axis-aligned reconstruction box in world millimetres.
struct VolumeBox {
  Vec3 min_mm;
  Vec3 max_mm;
  Vec3 center() const { return 0.5 * (min_mm + max_mm); }
  Vec3 extent() const { return max_mm - min_mm; }
};
// "[-48, 48] x [-48, 48] x [-33, 33] mm", for messages.
std::string describe_box(const VolumeBox& box);

struct CircularParallelParams {
  std::vector<double> angles_rad;
  double pixel_width_mm = 1;
  double pixel_height_mm = 1;
};

struct CircularConeParams {
  std::vector<double> angles_rad;
  double source_origin_mm = 0;
  double origin_detector_mm = 0;
  double pixel_width_mm = 1;
  double pixel_height_mm = 1;
  double detector_offset_u_mm = 0;  // shift of the detector centre along u
  double detector_offset_v_mm = 0;  // shift of the detector centre along v
};

// ASTRA's parallel3d / cone geometries expressed as vectors (identical to astra's geom_2vec).
ProjectionVector parallel_vector(double angle_rad, double pixel_width_mm, double pixel_height_mm);
ProjectionVector cone_vector(double angle_rad, const CircularConeParams& params);
ScanGeometry make_parallel_geometry(DetectorShape detector, const CircularParallelParams& params);
ScanGeometry make_cone_geometry(DetectorShape detector, const CircularConeParams& params);
// `values` holds 12 numbers per projection in ASTRA's order (s|r, d, u, v).
ScanGeometry make_vector_geometry(BeamKind beam, DetectorShape detector,
                                  const std::vector<double>& values);

// Centre-of-rotation correction: the rotation axis projects `offset_px` columns right of the
// detector centre, so every detector centre moves by -offset_px * u.
ScanGeometry with_rotation_axis_offset(const ScanGeometry& geometry, double offset_px);

// Empty string when valid, else a message naming the first problem (finite numbers, non-zero and
// non-parallel u and v, ray not parallel to the detector, source off the detector plane, ...).
std::string validate_geometry(const ScanGeometry& geometry);

}  // namespace slicestream
