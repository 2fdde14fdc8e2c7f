// The scan geometry as the user describes it (presets, flags, angles from files), resolved into
// the slot vectors the server builds from the ScanBegin and into that ScanBegin's fields. The
// simulator projects with exactly these vectors, so simulated frames and reconstruction agree.
#pragma once

#include <optional>
#include <vector>

#include "kernels/geometry.hpp"
#include "slicestream.pb.h"

namespace slicestream::detector {

struct GeometrySpec {
  BeamKind beam = BeamKind::kParallel;
  DetectorShape detector;
  double pixel_width_mm = 1;
  double pixel_height_mm = 1;
  double source_origin_mm = 0;    // cone only
  double origin_detector_mm = 0;  // cone only
  double detector_offset_u_mm = 0;
  double detector_offset_v_mm = 0;
  std::vector<double> slot_angles_rad;  // circular geometries: one angle per slot of a rotation
  std::vector<double> vectors;      // non-empty: ASTRA parallel3d_vec/cone_vec, 12 numbers per slot
  std::optional<VolumeBox> volume;  // unset: field_of_view_box()
};

// The detector's field of view at the rotation axis: the cylinder every projection of a full
// rotation sees (radius from the fan angle to the farther detector edge for cone beam, the
// detector's half width for parallel beam), as high as the detector seen from the axis.
// Throws std::invalid_argument for vector geometries (they need an explicit volume).
VolumeBox field_of_view_box(const GeometrySpec& spec);

class ResolvedGeometry {
 public:
  // Throws std::invalid_argument with a message naming the problem.
  explicit ResolvedGeometry(GeometrySpec spec);

  BeamKind beam() const { return spec_.beam; }
  DetectorShape detector() const { return spec_.detector; }
  int slot_count() const { return static_cast<int>(slots_.vectors.size()); }
  const ScanGeometry& slot_geometry() const { return slots_; }
  const VolumeBox& volume() const { return volume_; }
  const GeometrySpec& spec() const { return spec_; }
  // Circular geometries can place frames by angle; vector geometries (and parallel beam with a
  // detector offset, which the wire expresses as vectors) only by slot.
  bool is_circular() const { return spec_.vectors.empty() && !parallel_needs_vectors(); }
  // The vector of a circular geometry at any angle (frames placed by angle). Throws for vectors.
  ProjectionVector vector_at_angle(double angle_rad) const;

  // Sets rows/cols, pixel sizes, geometry, projections_per_rotation and volume.
  void fill_scan_begin(v1::ScanBegin& scan_begin) const;

 private:
  bool parallel_needs_vectors() const;
  CircularConeParams cone_params(std::vector<double> angles_rad) const;

  GeometrySpec spec_;
  ScanGeometry slots_;
  VolumeBox volume_;
};

}  // namespace slicestream::detector
