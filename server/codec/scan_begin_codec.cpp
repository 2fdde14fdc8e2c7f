#include "server/codec/scan_begin_codec.hpp"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "server/codec/common_codec.hpp"
#include "server/codec/enum_codec.hpp"

namespace slicestream {

namespace {

using Problem = std::optional<WireError>;

template <typename Repeated>
Problem check_all_finite(const Repeated& values, const char* field) {
  for (int i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values.Get(i))) {
      return invalid(wire_reason::kNonFinite,
                     std::string(field) + "[" + std::to_string(i) + "] is not a finite number");
    }
  }
  return std::nullopt;
}

Problem check_positive(double value, const char* field) {
  if (!std::isfinite(value)) {
    return invalid(wire_reason::kNonFinite, describe(field, value) + " is not a finite number");
  }
  if (value <= 0)
    return invalid(wire_reason::kBadGeometry, describe(field, value) + " must be > 0");
  return std::nullopt;
}

Problem check_finite(double value, const char* field) {
  if (std::isfinite(value)) return std::nullopt;
  return invalid(wire_reason::kNonFinite, describe(field, value) + " is not a finite number");
}

Problem check_count(int count, std::uint32_t projections_per_rotation, const char* what) {
  if (static_cast<std::uint32_t>(count) == projections_per_rotation) return std::nullopt;
  return invalid(wire_reason::kBadGeometry,
                 "projections_per_rotation (" + std::to_string(projections_per_rotation) +
                     ") must equal the number of " + what + " (" + std::to_string(count) + ")");
}

Problem check_detector(const v1::ScanBegin& wire, const WireLimits& limits) {
  if (wire.detector_rows() == 0 || wire.detector_cols() == 0) {
    return invalid(wire_reason::kBadShape,
                   "detector_rows and detector_cols must be at least 1, got " +
                       std::to_string(wire.detector_rows()) + " x " +
                       std::to_string(wire.detector_cols()));
  }
  const auto max_side = static_cast<std::uint32_t>(limits.max_detector_side);
  if (wire.detector_rows() > max_side || wire.detector_cols() > max_side) {
    return invalid(wire_reason::kOversized,
                   "detector " + std::to_string(wire.detector_rows()) + " x " +
                       std::to_string(wire.detector_cols()) + " exceeds the limit of " +
                       std::to_string(max_side) + " pixels per side (--max-detector-side)");
  }
  return std::nullopt;
}

Problem check_counts(const v1::ScanBegin& wire, const WireLimits& limits) {
  const auto max_calibration = static_cast<std::uint32_t>(limits.max_calibration_frames);
  if (wire.dark_count() > max_calibration || wire.flat_count() > max_calibration) {
    return invalid(wire_reason::kOversized,
                   "dark_count " + std::to_string(wire.dark_count()) + " / flat_count " +
                       std::to_string(wire.flat_count()) + " exceed the limit of " +
                       std::to_string(max_calibration) + " (--max-calibration-frames)");
  }
  if (wire.already_linear() && (wire.dark_count() > 0 || wire.flat_count() > 0)) {
    return invalid(wire_reason::kBadValue,
                   "an already_linear scan takes no darks or flats (dark_count " +
                       std::to_string(wire.dark_count()) + ", flat_count " +
                       std::to_string(wire.flat_count()) + ")");
  }
  if (wire.projections_per_rotation() == 0) {
    return invalid(wire_reason::kBadGeometry, "projections_per_rotation must be at least 1");
  }
  const auto max_projections = static_cast<std::uint32_t>(limits.max_projections_per_rotation);
  if (wire.projections_per_rotation() > max_projections) {
    return invalid(wire_reason::kOversized,
                   "projections_per_rotation " + std::to_string(wire.projections_per_rotation()) +
                       " exceeds the limit of " + std::to_string(max_projections) +
                       " (--max-projections)");
  }
  return std::nullopt;
}

std::vector<double> to_vector(const google::protobuf::RepeatedField<double>& values) {
  return {values.begin(), values.end()};
}

// Fills scan.geometry (and the circular parameters) from the oneof.
Problem decode_geometry(const v1::ScanBegin& wire, ScanDescription& scan) {
  const DetectorShape detector{static_cast<int>(wire.detector_rows()),
                               static_cast<int>(wire.detector_cols())};
  const std::uint32_t ppr = wire.projections_per_rotation();
  switch (wire.geometry_case()) {
    case v1::ScanBegin::kParallel: {
      const auto& g = wire.parallel();
      if (auto p = check_count(g.angles_rad_size(), ppr, "angles")) return p;
      if (auto p = check_all_finite(g.angles_rad(), "parallel.angles_rad")) return p;
      if (auto p = check_positive(wire.pixel_width_mm(), "pixel_width_mm")) return p;
      if (auto p = check_positive(wire.pixel_height_mm(), "pixel_height_mm")) return p;
      CircularParallelParams params{to_vector(g.angles_rad()), wire.pixel_width_mm(),
                                    wire.pixel_height_mm()};
      scan.geometry = make_parallel_geometry(detector, params);
      scan.circular_parallel = std::move(params);
      return std::nullopt;
    }
    case v1::ScanBegin::kCone: {
      const auto& g = wire.cone();
      if (auto p = check_count(g.angles_rad_size(), ppr, "angles")) return p;
      if (auto p = check_all_finite(g.angles_rad(), "cone.angles_rad")) return p;
      if (auto p = check_positive(wire.pixel_width_mm(), "pixel_width_mm")) return p;
      if (auto p = check_positive(wire.pixel_height_mm(), "pixel_height_mm")) return p;
      if (auto p = check_positive(g.source_origin_mm(), "cone.source_origin_mm")) return p;
      if (auto p = check_finite(g.origin_detector_mm(), "cone.origin_detector_mm")) return p;
      if (auto p = check_finite(g.detector_offset_u_mm(), "cone.detector_offset_u_mm")) return p;
      if (auto p = check_finite(g.detector_offset_v_mm(), "cone.detector_offset_v_mm")) return p;
      CircularConeParams params;
      params.angles_rad = to_vector(g.angles_rad());
      params.source_origin_mm = g.source_origin_mm();
      params.origin_detector_mm = g.origin_detector_mm();
      params.pixel_width_mm = wire.pixel_width_mm();
      params.pixel_height_mm = wire.pixel_height_mm();
      params.detector_offset_u_mm = g.detector_offset_u_mm();
      params.detector_offset_v_mm = g.detector_offset_v_mm();
      scan.geometry = make_cone_geometry(detector, params);
      scan.circular_cone = std::move(params);
      return std::nullopt;
    }
    case v1::ScanBegin::kVectors: {
      const auto& g = wire.vectors();
      if (g.vectors_size() % 12 != 0) {
        return invalid(
            wire_reason::kBadGeometry,
            "vectors must hold 12 numbers per projection, got " + std::to_string(g.vectors_size()));
      }
      if (auto p = check_count(g.vectors_size() / 12, ppr, "vectors")) return p;
      if (auto p = check_all_finite(g.vectors(), "vectors.vectors")) return p;
      scan.geometry = make_vector_geometry(g.cone() ? BeamKind::kCone : BeamKind::kParallel,
                                           detector, to_vector(g.vectors()));
      return std::nullopt;
    }
    case v1::ScanBegin::GEOMETRY_NOT_SET:
      break;
  }
  return invalid(wire_reason::kBadGeometry,
                 "ScanBegin has no geometry (set one of parallel, cone, vectors)");
}

}  // namespace

Decoded<ScanDescription> decode_scan_begin(const v1::ScanBegin& wire, const WireLimits& limits) {
  auto fail = [&](WireError error) {
    error.scan_id = wire.scan_id();
    error.message = "ScanBegin " + std::to_string(wire.scan_id()) + ": " + error.message;
    return Decoded<ScanDescription>(std::move(error));
  };
  if (auto p = check_detector(wire, limits)) return fail(*p);
  if (auto p = check_counts(wire, limits)) return fail(*p);
  const std::optional<PixelType> pixel_type = pixel_type_from_wire(wire.pixel_type());
  if (!pixel_type) {
    return fail(invalid(wire_reason::kBadPixelType, "pixel_type " +
                                                        std::to_string(wire.pixel_type()) +
                                                        " is not one of uint16, uint32, float32"));
  }
  if (!wire.has_volume()) {
    return fail(invalid(wire_reason::kBadVolume, "the reconstruction volume box is required"));
  }
  Decoded<VolumeBox> volume = decode_volume_box(wire.volume());
  if (!volume.ok()) return fail(volume.error());

  ScanDescription scan;
  scan.scan_id = wire.scan_id();
  scan.pixel_type = *pixel_type;
  scan.dark_count = static_cast<int>(wire.dark_count());
  scan.flat_count = static_cast<int>(wire.flat_count());
  scan.already_linear = wire.already_linear();
  scan.volume = volume.value();
  Decoded<std::string> description = decode_text(wire.description(), "description", limits);
  if (!description.ok()) return fail(description.error());
  scan.description = std::move(description.value());
  if (auto p = decode_geometry(wire, scan)) return fail(*p);
  std::string problem = validate_geometry(scan.geometry);
  if (!problem.empty()) return fail(invalid(wire_reason::kBadGeometry, problem));
  return scan;
}

}  // namespace slicestream
