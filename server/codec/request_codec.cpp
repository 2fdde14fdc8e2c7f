#include "server/codec/request_codec.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "server/codec/common_codec.hpp"
#include "server/codec/enum_codec.hpp"

namespace slicestream {

namespace {

constexpr std::uint32_t kProtocolVersion = 1;

template <typename T>
Decoded<Command> slice_command(std::uint32_t width, std::uint32_t height,
                               const v1::SliceOrientation& orientation, const char* field,
                               const WireLimits& limits, T command) {
  if (auto problem = check_slice_size(width, height, limits)) return *problem;
  Decoded<SliceOrientation> decoded = decode_orientation(orientation, field);
  if (!decoded.ok()) return decoded.error();
  command.orientation = decoded.value();
  command.width = static_cast<int>(width);
  command.height = static_cast<int>(height);
  return Command(std::move(command));
}

// Only the enums are checked here (an unknown number has no typed value); the ranges belong to
// the pipeline, which refuses a SetParameters or SetRefinement outside them.
Decoded<Command> decode_set_parameters(const v1::SetParameters& wire) {
  SetParametersCommand command;
  if (wire.has_filter()) {
    command.filter_window = filter_window_from_wire(wire.filter());
    if (!command.filter_window) {
      return invalid(wire_reason::kBadValue,
                     "filter " + std::to_string(wire.filter()) +
                         " is not one of ram-lak, shepp-logan, cosine, hamming, hann");
    }
  }
  if (wire.has_filter_cutoff()) command.filter_cutoff = wire.filter_cutoff();
  if (wire.has_window_mode()) {
    command.window_mode = window_mode_from_wire(wire.window_mode());
    if (!command.window_mode) {
      return invalid(wire_reason::kBadValue, "window_mode " + std::to_string(wire.window_mode()) +
                                                 " is not one of sliding, per-rotation");
    }
  }
  if (wire.has_rotation_axis_offset_px()) {
    command.rotation_axis_offset_px = wire.rotation_axis_offset_px();
  }
  if (wire.has_publish_rate_hz()) command.publish_rate_hz = wire.publish_rate_hz();
  if (wire.has_preview_interval_s()) command.preview_interval_s = wire.preview_interval_s();
  return Command(command);
}

Decoded<Command> decode_set_refinement(const v1::SetRefinement& wire) {
  SetRefinementCommand command;
  command.slice_id = wire.slice_id();
  command.enabled = wire.enabled();
  // The pipeline bounds the count (RefinementLimits); this only keeps it an int.
  command.iterations =
      static_cast<int>(std::min<std::uint32_t>(wire.iterations(), std::numeric_limits<int>::max()));
  command.interval_s = wire.interval_s();
  return Command(command);
}

}  // namespace

Decoded<Command> decode_request_body(const v1::Request& request, const WireLimits& limits) {
  if (request.protocol_version() != kProtocolVersion) {
    return invalid(wire_reason::kBadProtocolVersion,
                   "protocol_version " + std::to_string(request.protocol_version()) +
                       " is not supported (this server speaks version 1)");
  }
  switch (request.body_case()) {
    case v1::Request::kSetSlice: {
      const auto& wire = request.set_slice();
      SetSliceCommand command;
      command.slice_id = wire.slice_id();
      return slice_command(wire.width(), wire.height(), wire.orientation(), "SetSlice.orientation",
                           limits, command);
    }
    case v1::Request::kRemoveSlice:
      return Command(RemoveSliceCommand{request.remove_slice().slice_id()});
    case v1::Request::kGetSlice: {
      const auto& wire = request.get_slice();
      return slice_command(wire.width(), wire.height(), wire.orientation(), "GetSlice.orientation",
                           limits, GetSliceCommand{});
    }
    case v1::Request::kGetStatus:
      return Command(GetStatusCommand{});
    case v1::Request::kSetParameters:
      return decode_set_parameters(request.set_parameters());
    case v1::Request::kSetRefinement:
      return decode_set_refinement(request.set_refinement());
    case v1::Request::BODY_NOT_SET:
      break;
  }
  return invalid(wire_reason::kUnknownKind,
                 "Request carries none of SetSlice, RemoveSlice, GetSlice, GetStatus, "
                 "SetParameters, SetRefinement (unset or from a newer protocol)");
}

Decoded<v1::Request> parse_request(const void* data, std::size_t size, const WireLimits& limits) {
  if (size > limits.max_request_bytes) {
    WireError error =
        invalid(wire_reason::kOversized,
                "request of " + std::to_string(size) + " bytes exceeds the limit of " +
                    std::to_string(limits.max_request_bytes) + " bytes (--max-request-bytes)");
    error.code = StatusCode::kResourceExhausted;
    return error;
  }
  v1::Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) {
    return invalid(wire_reason::kUndecodableRequest,
                   "the request (" + std::to_string(size) +
                       " bytes) is not a slicestream.v1.Request protobuf");
  }
  return request;
}

std::string request_kind(const v1::Request& request) {
  const auto* field = v1::Request::descriptor()->FindFieldByNumber(request.body_case());
  return field ? field->name() : "none";
}

DecodedRequest decode_request(const void* data, std::size_t size, const WireLimits& limits) {
  Decoded<v1::Request> request = parse_request(data, size, limits);
  if (!request.ok()) return {0, std::move(request.error())};
  return {request.value().request_id(), decode_request_body(request.value(), limits)};
}

}  // namespace slicestream
