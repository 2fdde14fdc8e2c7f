// Enums between pipeline types and slicestream.v1. from_wire returns nothing for UNSPECIFIED and
// for numbers outside the enum (proto3 keeps unknown enum values, so they must be checked). The
// kernels' enums (PixelType, FrameKind, FilterWindow), which the clients send too, convert in
// wire/kernel_enums.hpp, included here for the codecs.
#pragma once

#include <optional>

#include "pipeline/messages/command.hpp"
#include "pipeline/messages/data_message.hpp"
#include "pipeline/messages/publish_sink.hpp"
#include "slicestream.pb.h"
#include "wire/kernel_enums.hpp"

namespace slicestream {

v1::WindowMode to_wire(WindowMode mode);
std::optional<WindowMode> window_mode_from_wire(int value);

v1::StatusCode to_wire(StatusCode code);  // replies only: nothing to read back
v1::EventKind to_wire(EventKind kind);    // events only: nothing to read back

}  // namespace slicestream
