// The requests endpoint's inbound codec: Request protobuf -> pipeline Command, with the checks of
// the wire form (size limit, protocol version, known kind and enum values, orientation, slice
// sizes). Parameter ranges are the pipeline's (pipeline/messages/parameters.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "pipeline/messages/command.hpp"
#include "server/codec/wire_error.hpp"
#include "server/codec/wire_limits.hpp"
#include "slicestream.pb.h"

namespace slicestream {

struct DecodedRequest {
  std::uint64_t request_id = 0;  // 0 when the request could not be parsed
  Decoded<Command> command;
};

// The size limit and the protobuf parse of a Request, before its body is validated.
Decoded<v1::Request> parse_request(const void* data, std::size_t size, const WireLimits& limits);

// "set_slice", "get_status", ... (the body's field name), "none" when the body is unset.
std::string request_kind(const v1::Request& request);

DecodedRequest decode_request(const void* data, std::size_t size, const WireLimits& limits);
Decoded<Command> decode_request_body(const v1::Request& request, const WireLimits& limits);

}  // namespace slicestream
