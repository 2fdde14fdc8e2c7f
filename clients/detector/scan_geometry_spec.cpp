#include "clients/detector/scan_geometry_spec.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace slicestream::detector {

namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}

v1::Vec3 to_wire(Vec3 v) {
  v1::Vec3 out;
  out.set_x(v.x);
  out.set_y(v.y);
  out.set_z(v.z);
  return out;
}

// Parallel beam with a detector offset: the wire's ParallelBeamGeometry has no offset, so the
// shifted detector travels as vectors.
ProjectionVector shifted_parallel_vector(double angle_rad, const GeometrySpec& spec) {
  ProjectionVector vec = parallel_vector(angle_rad, spec.pixel_width_mm, spec.pixel_height_mm);
  const Vec3 u_hat = (1.0 / spec.pixel_width_mm) * vec.u;
  vec.detector_center = spec.detector_offset_u_mm * u_hat + Vec3{0, 0, spec.detector_offset_v_mm};
  return vec;
}

std::vector<double> flatten(const ScanGeometry& geometry) {
  std::vector<double> values;
  values.reserve(12 * geometry.vectors.size());
  for (const ProjectionVector& v : geometry.vectors) {
    for (Vec3 part : {v.source_or_ray, v.detector_center, v.u, v.v}) {
      values.insert(values.end(), {part.x, part.y, part.z});
    }
  }
  return values;
}

}  // namespace

VolumeBox field_of_view_box(const GeometrySpec& spec) {
  require(spec.vectors.empty(),
          "a vector geometry has no default field of view: give the reconstruction box with "
          "--volume xmin,ymin,zmin,xmax,ymax,zmax");
  const double width_mm = spec.detector.cols * spec.pixel_width_mm;
  const double height_mm = spec.detector.rows * spec.pixel_height_mm;
  const double far_edge_u_mm = std::abs(spec.detector_offset_u_mm) + 0.5 * width_mm;
  double radius_mm = far_edge_u_mm;
  double magnification = 1;
  if (spec.beam == BeamKind::kCone) {
    const double source_detector_mm = spec.source_origin_mm + spec.origin_detector_mm;
    // The circle that the fan (to its farther edge) sweeps around the axis in a full rotation.
    radius_mm = spec.source_origin_mm * std::sin(std::atan2(far_edge_u_mm, source_detector_mm));
    magnification = source_detector_mm / spec.source_origin_mm;
  }
  const double z_low = (spec.detector_offset_v_mm - 0.5 * height_mm) / magnification;
  const double z_high = (spec.detector_offset_v_mm + 0.5 * height_mm) / magnification;
  return {{-radius_mm, -radius_mm, z_low}, {radius_mm, radius_mm, z_high}};
}

ResolvedGeometry::ResolvedGeometry(GeometrySpec spec) : spec_(std::move(spec)) {
  const GeometrySpec& s = spec_;
  require(s.detector.rows > 0 && s.detector.cols > 0,
          "the detector needs at least one row and one column");
  require(std::isfinite(s.pixel_width_mm) && std::isfinite(s.pixel_height_mm) &&
              s.pixel_width_mm > 0 && s.pixel_height_mm > 0,
          "the pixel size must be positive");
  require(std::isfinite(s.detector_offset_u_mm) && std::isfinite(s.detector_offset_v_mm),
          "the detector offset must be finite");
  if (s.vectors.empty()) {
    require(!s.slot_angles_rad.empty(), "the scan has no projection angles");
    require(std::all_of(s.slot_angles_rad.begin(), s.slot_angles_rad.end(),
                        [](double a) { return std::isfinite(a); }),
            "the projection angles must be finite");
  } else {
    require(s.vectors.size() % 12 == 0,
            "a vector geometry needs 12 numbers per projection (ASTRA order s|r, d, u, v); got " +
                std::to_string(s.vectors.size()));
  }
  if (s.beam == BeamKind::kCone && s.vectors.empty()) {
    require(std::isfinite(s.source_origin_mm) && s.source_origin_mm > 0,
            "cone beam needs a positive source-origin distance (--sod, mm)");
    require(std::isfinite(s.origin_detector_mm) && s.origin_detector_mm >= 0,
            "cone beam needs a non-negative origin-detector distance (--odd, mm)");
  }

  if (!s.vectors.empty()) {
    slots_ = make_vector_geometry(s.beam, s.detector, s.vectors);
  } else if (s.beam == BeamKind::kCone) {
    slots_ = make_cone_geometry(s.detector, cone_params(s.slot_angles_rad));
  } else if (parallel_needs_vectors()) {
    slots_ = {BeamKind::kParallel, s.detector, {}};
    for (double angle : s.slot_angles_rad) {
      slots_.vectors.push_back(shifted_parallel_vector(angle, s));
    }
  } else {
    slots_ = make_parallel_geometry(s.detector,
                                    {s.slot_angles_rad, s.pixel_width_mm, s.pixel_height_mm});
  }
  const std::string problem = validate_geometry(slots_);
  require(problem.empty(), "invalid geometry: " + problem);

  volume_ = s.volume ? *s.volume : field_of_view_box(s);
  require(is_finite(volume_.min_mm) && is_finite(volume_.max_mm) &&
              volume_.min_mm.x < volume_.max_mm.x && volume_.min_mm.y < volume_.max_mm.y &&
              volume_.min_mm.z < volume_.max_mm.z,
          "the reconstruction volume needs finite min < max on every axis");
}

bool ResolvedGeometry::parallel_needs_vectors() const {
  return spec_.beam == BeamKind::kParallel && spec_.vectors.empty() &&
         (spec_.detector_offset_u_mm != 0 || spec_.detector_offset_v_mm != 0);
}

CircularConeParams ResolvedGeometry::cone_params(std::vector<double> angles_rad) const {
  CircularConeParams params;
  params.angles_rad = std::move(angles_rad);
  params.source_origin_mm = spec_.source_origin_mm;
  params.origin_detector_mm = spec_.origin_detector_mm;
  params.pixel_width_mm = spec_.pixel_width_mm;
  params.pixel_height_mm = spec_.pixel_height_mm;
  params.detector_offset_u_mm = spec_.detector_offset_u_mm;
  params.detector_offset_v_mm = spec_.detector_offset_v_mm;
  return params;
}

ProjectionVector ResolvedGeometry::vector_at_angle(double angle_rad) const {
  if (!is_circular()) {
    throw std::logic_error("frames of a vector geometry are placed by slot, not by angle");
  }
  if (spec_.beam == BeamKind::kCone) return cone_vector(angle_rad, cone_params({}));
  return parallel_vector(angle_rad, spec_.pixel_width_mm, spec_.pixel_height_mm);
}

void ResolvedGeometry::fill_scan_begin(v1::ScanBegin& scan_begin) const {
  scan_begin.set_detector_rows(static_cast<std::uint32_t>(spec_.detector.rows));
  scan_begin.set_detector_cols(static_cast<std::uint32_t>(spec_.detector.cols));
  scan_begin.set_pixel_width_mm(spec_.pixel_width_mm);
  scan_begin.set_pixel_height_mm(spec_.pixel_height_mm);
  scan_begin.set_projections_per_rotation(static_cast<std::uint32_t>(slot_count()));
  if (!is_circular()) {
    v1::VectorGeometry* vectors = scan_begin.mutable_vectors();
    vectors->set_cone(spec_.beam == BeamKind::kCone);
    for (double value : flatten(slots_))
      vectors->add_vectors(value);
  } else if (spec_.beam == BeamKind::kCone) {
    v1::ConeBeamGeometry* cone = scan_begin.mutable_cone();
    for (double angle : spec_.slot_angles_rad)
      cone->add_angles_rad(angle);
    cone->set_source_origin_mm(spec_.source_origin_mm);
    cone->set_origin_detector_mm(spec_.origin_detector_mm);
    cone->set_detector_offset_u_mm(spec_.detector_offset_u_mm);
    cone->set_detector_offset_v_mm(spec_.detector_offset_v_mm);
  } else {
    v1::ParallelBeamGeometry* parallel = scan_begin.mutable_parallel();
    for (double angle : spec_.slot_angles_rad)
      parallel->add_angles_rad(angle);
  }
  *scan_begin.mutable_volume()->mutable_min_mm() = to_wire(volume_.min_mm);
  *scan_begin.mutable_volume()->mutable_max_mm() = to_wire(volume_.max_mm);
}

}  // namespace slicestream::detector
