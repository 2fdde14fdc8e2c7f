// The outcome of decoding a wire message: the typed value, or why it was refused.
//
// Every refusal carries a status code (for replies), a machine-readable reason (the discard
// counter's key, docs/protocol.md lists them all) and a message a person can act on.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "pipeline/messages/command.hpp"

namespace slicestream {

// Discard / error reasons produced by the codecs (the pipeline adds its own semantic ones).
namespace wire_reason {
inline constexpr const char* kBadProtocolVersion = "bad_protocol_version";
inline constexpr const char* kUndecodableHeader = "undecodable_header";
inline constexpr const char* kUndecodableRequest = "undecodable_request";
inline constexpr const char* kUnknownKind = "unknown_kind";
inline constexpr const char* kBadParts = "bad_parts";
inline constexpr const char* kOversized = "oversized";
inline constexpr const char* kNonFinite = "non_finite";
inline constexpr const char* kBadShape = "bad_shape";
inline constexpr const char* kBadPixelType = "bad_pixel_type";
inline constexpr const char* kBadPayloadSize = "bad_payload_size";
inline constexpr const char* kBadFrameKind = "bad_frame_kind";
inline constexpr const char* kBadGeometry = "bad_geometry";
inline constexpr const char* kBadVolume = "bad_volume";
inline constexpr const char* kBadOrientation = "bad_orientation";
inline constexpr const char* kBadValue = "bad_value";
inline constexpr const char* kReplyBacklog = "reply_backlog";  // requester_backlog.hpp
}  // namespace wire_reason

struct WireError {
  StatusCode code = StatusCode::kInvalidArgument;
  std::string reason;         // one of wire_reason
  std::string message;        // human-readable, names the offending field
  std::uint64_t scan_id = 0;  // of the refused data message, when it could be read
};

inline WireError invalid(const char* reason, std::string message) {
  return {StatusCode::kInvalidArgument, reason, std::move(message), 0};
}

// Either a decoded value or a WireError.
template <typename T>
class Decoded {
 public:
  Decoded(T value) : result_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  Decoded(WireError error) : result_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return result_.index() == 0; }
  T& value() { return std::get<0>(result_); }
  const T& value() const { return std::get<0>(result_); }
  const WireError& error() const { return std::get<1>(result_); }
  WireError& error() { return std::get<1>(result_); }

 private:
  std::variant<T, WireError> result_;
};

}  // namespace slicestream
