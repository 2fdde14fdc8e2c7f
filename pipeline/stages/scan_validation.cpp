#include "pipeline/stages/scan_validation.hpp"

#include <cmath>
#include <vector>

namespace slicestream {
namespace {

bool all_finite(const std::vector<double>& values) {
  for (double v : values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

std::string circular_problem(const std::vector<double>& angles, double pixel_width_mm,
                             double pixel_height_mm, int projections) {
  if (static_cast<int>(angles.size()) != projections) {
    return "the circular geometry lists " + std::to_string(angles.size()) +
           " angles for a window of " + std::to_string(projections) + " projections";
  }
  if (!all_finite(angles)) return "the circular geometry has a non-finite angle";
  if (!(pixel_width_mm > 0) || !(pixel_height_mm > 0) || !std::isfinite(pixel_width_mm) ||
      !std::isfinite(pixel_height_mm)) {
    return "detector pixel sizes must be positive and finite";
  }
  return {};
}

}  // namespace

bool is_valid(PixelType type) {
  return type == PixelType::kUint16 || type == PixelType::kUint32 || type == PixelType::kFloat32;
}

std::string volume_box_problem(const VolumeBox& box) {
  if (!is_finite(box.min_mm) || !is_finite(box.max_mm) || !(box.max_mm.x > box.min_mm.x) ||
      !(box.max_mm.y > box.min_mm.y) || !(box.max_mm.z > box.min_mm.z)) {
    return "the reconstruction volume box must be finite with max > min on every axis";
  }
  return {};
}

std::string validate_scan_description(const ScanDescription& scan) {
  const DetectorShape d = scan.geometry.detector;
  if (d.rows <= 0 || d.cols <= 0 || d.rows > kMaxDetectorSide || d.cols > kMaxDetectorSide) {
    return "detector size " + std::to_string(d.rows) + " x " + std::to_string(d.cols) +
           " outside 1.." + std::to_string(kMaxDetectorSide);
  }
  const int n = scan.projections_per_rotation();
  if (n <= 0 || n > kMaxProjectionsPerRotation) {
    return "projections per rotation " + std::to_string(n) + " outside 1.." +
           std::to_string(kMaxProjectionsPerRotation);
  }
  const std::string geometry = validate_geometry(scan.geometry);
  if (!geometry.empty()) return "geometry: " + geometry;
  if (!is_valid(scan.pixel_type)) return "unknown pixel type";
  if (scan.dark_count < 0 || scan.flat_count < 0 || scan.dark_count > kMaxCalibrationFrames ||
      scan.flat_count > kMaxCalibrationFrames) {
    return "dark/flat counts must lie in 0.." + std::to_string(kMaxCalibrationFrames);
  }
  const std::string box = volume_box_problem(scan.volume);
  if (!box.empty()) return box;
  if (scan.circular_parallel && scan.circular_cone) {
    return "a scan has either a parallel or a cone circular geometry, not both";
  }
  if (scan.circular_parallel) {
    if (scan.geometry.beam != BeamKind::kParallel) return "circular parallel scan with cone beam";
    const CircularParallelParams& p = *scan.circular_parallel;
    return circular_problem(p.angles_rad, p.pixel_width_mm, p.pixel_height_mm, n);
  }
  if (scan.circular_cone) {
    if (scan.geometry.beam != BeamKind::kCone) return "circular cone scan with parallel beam";
    const CircularConeParams& p = *scan.circular_cone;
    std::string problem = circular_problem(p.angles_rad, p.pixel_width_mm, p.pixel_height_mm, n);
    if (!problem.empty()) return problem;
    if (!std::isfinite(p.source_origin_mm) || !std::isfinite(p.origin_detector_mm) ||
        !(p.source_origin_mm > 0) || !(p.origin_detector_mm >= 0) ||
        !std::isfinite(p.detector_offset_u_mm) || !std::isfinite(p.detector_offset_v_mm)) {
      return "cone distances must be finite, source-origin > 0 and origin-detector >= 0";
    }
  }
  return {};
}

}  // namespace slicestream
