// Shared wire types (orientation, volume box) and the size checks used by several messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "server/codec/wire_error.hpp"
#include "server/codec/wire_limits.hpp"
#include "slicestream.pb.h"

namespace slicestream {

// Exactly 9 finite values forming valid axes (validate_orientation). `field` names it in errors.
Decoded<SliceOrientation> decode_orientation(const v1::SliceOrientation& wire, const char* field);
void encode_orientation(const SliceOrientation& orientation, v1::SliceOrientation* wire);

// Finite corners with min < max on every axis.
Decoded<VolumeBox> decode_volume_box(const v1::VolumeBox& wire);
void encode_volume_box(const VolumeBox& box, v1::VolumeBox* wire);

// Width and height of a requested slice: 1 .. limits.max_slice_side each.
std::optional<WireError> check_slice_size(std::uint32_t width, std::uint32_t height,
                                          const WireLimits& limits);

// A string field from the wire, for every codec (native, tomop, HTTP/WebSocket): refused as
// `oversized` (RESOURCE_EXHAUSTED) when it holds more than limits.max_text_bytes bytes, else
// escaped (escape_wire_text, wire/wire_text.hpp) so that it can be logged, stored and echoed as it
// is. `field` names it in the error.
Decoded<std::string> decode_text(const std::string& wire, const char* field,
                                 const WireLimits& limits);

// "name=value" for messages; keeps error texts uniform.
std::string describe(const char* name, double value);

}  // namespace slicestream
