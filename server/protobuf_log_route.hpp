// libprotobuf's own log lines, through spdlog. libprotobuf writes a line to stderr for every
// string field of a parsed message that is not valid UTF-8 ("String field '...' contains invalid
// UTF-8 data ..."), before the parse fails and the codec refuses the message (counted and
// answered there); a client that sends such messages in a loop would flood the server's stderr.
// Routed, the lines are escaped (escape_wire_text), logged at most kProtobufLinesPerSecond per
// second with a count of those suppressed, and every one is counted (`protobuf_log_lines` in
// GetStatus and the metrics).
#pragma once

#include <cstdint>

namespace slicestream {

inline constexpr int kProtobufLinesPerSecond = 5;

// Installs the route for the whole process. libprotobuf's SetLogHandler is not thread-safe: call
// this once at start-up (main), before any endpoint parses a message. Later calls do nothing.
void route_protobuf_logs();

// The lines libprotobuf has produced since the route was installed, logged or suppressed.
std::uint64_t protobuf_log_lines();

}  // namespace slicestream
