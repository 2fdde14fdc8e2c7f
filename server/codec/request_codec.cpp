#include "server/codec/request_codec.hpp"

#include <algorithm>
#include <cmath>
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

std::optional<WireError> check_range(double value, const char* field, double low, bool low_open,
                                     double high) {
  if (!std::isfinite(value)) {
    return invalid(wire_reason::kNonFinite, describe(field, value) + " is not a finite number");
  }
  const bool below = low_open ? value <= low : value < low;
  if (below || value > high) {
    return invalid(wire_reason::kBadValue, describe(field, value) + " is outside " +
                                               (low_open ? "(" : "[") + std::to_string(low) + ", " +
                                               std::to_string(high) + "]");
  }
  return std::nullopt;
}

Decoded<Command> decode_set_parameters(const v1::SetParameters& wire, const WireLimits& limits,
                                       const FilterConfig& current_filter) {
  SetParametersCommand command;
  if (wire.has_filter() || wire.has_filter_cutoff()) {
    FilterConfig filter = current_filter;
    if (wire.has_filter()) {
      std::optional<FilterWindow> window = filter_window_from_wire(wire.filter());
      if (!window) {
        return invalid(wire_reason::kBadValue,
                       "filter " + std::to_string(wire.filter()) +
                           " is not one of ram-lak, shepp-logan, cosine, hamming, hann");
      }
      filter.window = *window;
    }
    if (wire.has_filter_cutoff()) {
      if (auto p = check_range(wire.filter_cutoff(), "filter_cutoff", 0, true, 1)) return *p;
      filter.cutoff = wire.filter_cutoff();
    }
    command.filter = filter;
  }
  if (wire.has_window_mode()) {
    std::optional<WindowMode> mode = window_mode_from_wire(wire.window_mode());
    if (!mode) {
      return invalid(wire_reason::kBadValue, "window_mode " + std::to_string(wire.window_mode()) +
                                                 " is not one of sliding, per-rotation");
    }
    command.window_mode = mode;
  }
  if (wire.has_rotation_axis_offset_px()) {
    const double bound = limits.max_detector_side;
    if (auto p = check_range(wire.rotation_axis_offset_px(), "rotation_axis_offset_px", -bound,
                             false, bound)) {
      return *p;
    }
    command.rotation_axis_offset_px = wire.rotation_axis_offset_px();
  }
  constexpr double kMaxRateHz = 1e6;
  constexpr double kMaxIntervalS = 86400;
  if (wire.has_publish_rate_hz()) {
    if (auto p = check_range(wire.publish_rate_hz(), "publish_rate_hz", 0, false, kMaxRateHz)) {
      return *p;
    }
    command.publish_rate_hz = wire.publish_rate_hz();
  }
  if (wire.has_preview_interval_s()) {
    if (auto p =
            check_range(wire.preview_interval_s(), "preview_interval_s", 0, false, kMaxIntervalS)) {
      return *p;
    }
    command.preview_interval_s = wire.preview_interval_s();
  }
  return Command(command);
}

Decoded<Command> decode_set_refinement(const v1::SetRefinement& wire) {
  SetRefinementCommand command;
  command.slice_id = wire.slice_id();
  command.enabled = wire.enabled();
  // The pipeline bounds the count (RefinementLimits); this only keeps it an int.
  command.iterations =
      static_cast<int>(std::min<std::uint32_t>(wire.iterations(), std::numeric_limits<int>::max()));
  if (wire.enabled()) {
    constexpr double kMaxIntervalS = 86400;
    if (auto p = check_range(wire.interval_s(), "interval_s", 0, false, kMaxIntervalS)) return *p;
  }
  command.interval_s = wire.interval_s();
  return Command(command);
}

}  // namespace

Decoded<Command> decode_request_body(const v1::Request& request, const WireLimits& limits,
                                     const FilterConfig& current_filter) {
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
      return decode_set_parameters(request.set_parameters(), limits, current_filter);
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

DecodedRequest decode_request(const void* data, std::size_t size, const WireLimits& limits,
                              const FilterConfig& current_filter) {
  Decoded<v1::Request> request = parse_request(data, size, limits);
  if (!request.ok()) return {0, std::move(request.error())};
  return {request.value().request_id(),
          decode_request_body(request.value(), limits, current_filter)};
}

}  // namespace slicestream
