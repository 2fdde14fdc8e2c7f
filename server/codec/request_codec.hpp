// The requests endpoint's inbound codec: Request protobuf -> pipeline Command, with the checks of
// the wire form (size limit, protocol version, known kind and enum values, orientation, slice
// sizes). Parameter ranges are the pipeline's (pipeline/messages/parameters.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "pipeline/messages/command.hpp"
#include "server/codec/wire_error.hpp"
#include "server/codec/wire_limits.hpp"
#include "slicestream.pb.h"

namespace slicestream {

// SetCapture: answered by the server's capture (server/capture/), not by the pipeline.
struct CaptureRequest {
  bool enabled = false;
  std::string label;  // checked: at most kMaxCaptureLabel of [A-Za-z0-9._-], not starting with '.'
};
inline constexpr std::size_t kMaxCaptureLabel = 64;

struct DecodedRequest {
  std::uint64_t request_id = 0;  // 0 when the request could not be parsed
  // The pipeline's command. For a SetCapture it is a refusal (FAILED_PRECONDITION, capture_off)
  // that a server without a capture directory sends back as it is; `capture` then holds the
  // decoded request.
  Decoded<Command> command;
  std::optional<Decoded<CaptureRequest>> capture;
};

// The size limit and the protobuf parse of a Request, before its body is validated.
Decoded<v1::Request> parse_request(const void* data, std::size_t size, const WireLimits& limits);

// "set_slice", "get_status", ... (the body's field name), "none" when the body is unset.
std::string request_kind(const v1::Request& request);

DecodedRequest decode_request(const void* data, std::size_t size, const WireLimits& limits);
Decoded<Command> decode_request_body(const v1::Request& request, const WireLimits& limits);
// SetCapture's body (its label is checked here: it becomes part of a file name).
Decoded<CaptureRequest> decode_set_capture(const v1::SetCapture& wire);

}  // namespace slicestream
