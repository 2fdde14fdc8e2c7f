// The kernels' plain enums (PixelType, FrameKind, FilterWindow) <-> slicestream.v1. One
// conversion for everyone who speaks the wire: the server's codecs and the clients (the detector
// simulator sends PixelType and FrameKind). from_wire returns nothing for UNSPECIFIED and for
// numbers outside the enum (proto3 keeps unknown enum values, so they must be checked).
#pragma once

#include <optional>

#include "kernels/filter_config.hpp"
#include "kernels/frame_view.hpp"
#include "slicestream.pb.h"

namespace slicestream {

v1::PixelType to_wire(PixelType type);
std::optional<PixelType> pixel_type_from_wire(int value);

v1::FrameKind to_wire(FrameKind kind);
std::optional<FrameKind> frame_kind_from_wire(int value);

v1::FilterWindow to_wire(FilterWindow window);
std::optional<FilterWindow> filter_window_from_wire(int value);

}  // namespace slicestream
