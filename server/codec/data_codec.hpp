// The data endpoint's codec: [DataHeader][payload] -> pipeline DataMessage, with all wire
// validation (framing, protocol version, sizes and limits, finite numbers, enums, geometry).
// Semantic checks that need the scan state (scan id, shape against the scan, indices) are the
// pipeline's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <zmq.hpp>

#include "pipeline/messages/data_message.hpp"
#include "server/codec/wire_error.hpp"
#include "server/codec/wire_limits.hpp"
#include "slicestream.pb.h"

namespace slicestream {

struct DataDecodeInfo {
  // The transport delivered the payload at an address unsuitable for its pixel type, so it was
  // copied once into aligned memory (rare; counted by the endpoint).
  bool payload_realigned = false;
};

// `parts` holds the message's first parts as received (the endpoint keeps at most 3) and
// `part_count` how many parts the message had in all. A Frame's payload part is moved into the
// RawFrame without copying. `arrival_ns`: server steady clock when the message arrived.
Decoded<DataMessage> decode_data_message(std::vector<zmq::message_t>& parts, std::size_t part_count,
                                         std::uint64_t arrival_ns, const WireLimits& limits,
                                         DataDecodeInfo* info = nullptr);

// A Frame header and its payload part (decode_scan_begin is in scan_begin_codec.hpp).
Decoded<RawFrame> decode_frame(const v1::Frame& wire, zmq::message_t payload,
                               const WireLimits& limits, DataDecodeInfo* info = nullptr);

}  // namespace slicestream
