// The requests endpoint's inbound codec: Request protobuf -> pipeline Command, with validation
// (size limit, protocol version, known kind, orientation, slice sizes, parameter ranges).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/filter_config.hpp"
#include "pipeline/messages/command.hpp"
#include "server/codec/wire_error.hpp"
#include "server/codec/wire_limits.hpp"
#include "slicestream.pb.h"

namespace slicestream {

struct DecodedRequest {
  std::uint64_t request_id = 0;  // 0 when the request could not be parsed
  Decoded<Command> command;
};

// `current_filter` completes a SetParameters that sets only one of filter / filter_cutoff (the
// pipeline command carries the whole FilterConfig).
DecodedRequest decode_request(const void* data, std::size_t size, const WireLimits& limits,
                              const FilterConfig& current_filter);
Decoded<Command> decode_request_body(const v1::Request& request, const WireLimits& limits,
                                     const FilterConfig& current_filter);

}  // namespace slicestream
