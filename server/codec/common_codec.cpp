#include "server/codec/common_codec.hpp"

#include <cmath>
#include <sstream>

#include "wire/wire_text.hpp"

namespace slicestream {

namespace {

bool finite(const v1::Vec3& v) {
  return std::isfinite(v.x()) && std::isfinite(v.y()) && std::isfinite(v.z());
}

Vec3 from_wire(const v1::Vec3& v) {
  return {v.x(), v.y(), v.z()};
}

void to_wire(Vec3 v, v1::Vec3* wire) {
  wire->set_x(v.x);
  wire->set_y(v.y);
  wire->set_z(v.z);
}

}  // namespace

Decoded<std::string> decode_text(const std::string& wire, const char* field,
                                 const WireLimits& limits) {
  if (wire.size() > limits.max_text_bytes) {
    WireError error = invalid(wire_reason::kOversized,
                              std::string(field) + " holds " + std::to_string(wire.size()) +
                                  " bytes, over the limit of " +
                                  std::to_string(limits.max_text_bytes) + " (--max-text-bytes)");
    error.code = StatusCode::kResourceExhausted;
    return error;
  }
  return escape_wire_text(wire, limits.max_text_bytes);
}

std::string describe(const char* name, double value) {
  std::ostringstream out;
  out << name << "=" << value;
  return out.str();
}

Decoded<SliceOrientation> decode_orientation(const v1::SliceOrientation& wire, const char* field) {
  const std::string name(field);
  if (wire.values_size() != 9) {
    return invalid(wire_reason::kBadOrientation,
                   name + " must have exactly 9 values (x-axis, y-axis, base point), got " +
                       std::to_string(wire.values_size()));
  }
  SliceOrientation orientation;
  for (int i = 0; i < 9; ++i) {
    const float value = wire.values(i);
    if (!std::isfinite(value)) {
      return invalid(wire_reason::kNonFinite,
                     name + " value " + std::to_string(i) + " is not a finite number");
    }
    orientation.values[static_cast<std::size_t>(i)] = value;
  }
  std::string problem = validate_orientation(orientation);
  if (!problem.empty()) return invalid(wire_reason::kBadOrientation, name + ": " + problem);
  return orientation;
}

void encode_orientation(const SliceOrientation& orientation, v1::SliceOrientation* wire) {
  wire->clear_values();
  for (float value : orientation.values)
    wire->add_values(value);
}

Decoded<VolumeBox> decode_volume_box(const v1::VolumeBox& wire) {
  if (!wire.has_min_mm() || !wire.has_max_mm()) {
    return invalid(wire_reason::kBadVolume, "volume box needs both min_mm and max_mm");
  }
  if (!finite(wire.min_mm()) || !finite(wire.max_mm())) {
    return invalid(wire_reason::kNonFinite, "volume box has a non-finite corner");
  }
  VolumeBox box{from_wire(wire.min_mm()), from_wire(wire.max_mm())};
  if (!(box.min_mm.x < box.max_mm.x && box.min_mm.y < box.max_mm.y &&
        box.min_mm.z < box.max_mm.z)) {
    std::ostringstream out;
    out << "volume box needs min < max on every axis, got min (" << box.min_mm.x << ", "
        << box.min_mm.y << ", " << box.min_mm.z << ") max (" << box.max_mm.x << ", " << box.max_mm.y
        << ", " << box.max_mm.z << ")";
    return invalid(wire_reason::kBadVolume, out.str());
  }
  return box;
}

void encode_volume_box(const VolumeBox& box, v1::VolumeBox* wire) {
  to_wire(box.min_mm, wire->mutable_min_mm());
  to_wire(box.max_mm, wire->mutable_max_mm());
}

std::optional<WireError> check_slice_size(std::uint32_t width, std::uint32_t height,
                                          const WireLimits& limits) {
  if (width == 0 || height == 0) {
    return invalid(wire_reason::kBadShape, "slice width and height must be at least 1, got " +
                                               std::to_string(width) + " x " +
                                               std::to_string(height));
  }
  const auto max_side = static_cast<std::uint32_t>(limits.max_slice_side);
  if (width > max_side || height > max_side) {
    WireError error = invalid(wire_reason::kOversized,
                              "slice " + std::to_string(width) + " x " + std::to_string(height) +
                                  " exceeds the limit of " + std::to_string(max_side) +
                                  " pixels per side (--max-slice-side)");
    error.code = StatusCode::kResourceExhausted;
    return error;
  }
  return std::nullopt;
}

}  // namespace slicestream
