// Enums between pipeline types and slicestream.v1. from_wire returns nothing for UNSPECIFIED and
// for numbers outside the enum (proto3 keeps unknown enum values, so they must be checked).
#pragma once

#include <optional>

#include "kernels/filter_config.hpp"
#include "kernels/frame_view.hpp"
#include "pipeline/command.hpp"
#include "pipeline/data_message.hpp"
#include "pipeline/publish_sink.hpp"
#include "slicestream.pb.h"

namespace slicestream {

v1::PixelType to_wire(PixelType type);
v1::FrameKind to_wire(FrameKind kind);
v1::FilterWindow to_wire(FilterWindow window);
v1::WindowMode to_wire(WindowMode mode);
v1::StatusCode to_wire(StatusCode code);
v1::EventKind to_wire(EventKind kind);

std::optional<PixelType> pixel_type_from_wire(int value);
std::optional<FrameKind> frame_kind_from_wire(int value);
std::optional<FilterWindow> filter_window_from_wire(int value);
std::optional<WindowMode> window_mode_from_wire(int value);

}  // namespace slicestream
