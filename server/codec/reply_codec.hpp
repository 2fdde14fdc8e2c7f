// The requests endpoint's outbound codec: pipeline CommandReply -> Reply (+ GetSlice payload).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/messages/command.hpp"
#include "server/codec/wire_error.hpp"
#include "slicestream.pb.h"

namespace slicestream {

// Counters kept by the server itself (requests, replies, wire rejections), reported next to the
// pipeline's in StatusReport.counters.
using CounterMap = std::map<std::string, std::uint64_t>;

// A reply ready for the wire: the Reply and, for an OK GetSlice, its width x height float32
// values (row 0 at the bottom), which travel beside it.
struct WireReply {
  v1::Reply reply;
  std::optional<std::vector<float>> values;
};

// The slice values are not encoded here (they travel as their own part, payload_message).
v1::Reply encode_reply(std::uint64_t request_id, const CommandReply& reply,
                       std::uint64_t published_ns, const CounterMap& server_counters);
v1::Reply encode_error_reply(std::uint64_t request_id, const WireError& error);

void encode_parameters(const Parameters& parameters, v1::Parameters* wire);
void encode_status_report(const StatusReport& report, const CounterMap& server_counters,
                          v1::StatusReport* wire);

}  // namespace slicestream
