// The requests endpoint's inbound codec: Request protobuf -> pipeline Command, with the checks of
// the wire form (size limit, protocol version, known kind and enum values, orientation, slice
// sizes). Parameter ranges are the pipeline's (pipeline/messages/parameters.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "pipeline/messages/command.hpp"
#include "server/codec/wire_error.hpp"
#include "server/codec/wire_limits.hpp"
#include "slicestream.pb.h"

namespace slicestream {

struct DecodedRequest {
  std::uint64_t request_id = 0;  // 0 when the request could not be parsed
  Decoded<Command> command;
};

DecodedRequest decode_request(const void* data, std::size_t size, const WireLimits& limits);
Decoded<Command> decode_request_body(const v1::Request& request, const WireLimits& limits);

}  // namespace slicestream
