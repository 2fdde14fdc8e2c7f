// slicestream.v1 messages as JSON for the browser (protobuf's JSON mapping: field names as in
// the .proto, enums by name, 64-bit integers as strings, fields at their default printed).
#pragma once

#include <cstddef>
#include <string>

#include <google/protobuf/message.h>

namespace slicestream {

std::string to_json(const google::protobuf::Message& message);
// Fills `message` from `json`; empty when it worked, else the parser's complaint. Unknown
// fields are refused.
std::string from_json(const std::string& json, google::protobuf::Message* message);
// Text that came from the wire, safe to log and to send back: bytes outside printable ASCII as
// \xNN, cut to `max_bytes` (then ending in "...").
std::string printable(const std::string& text, std::size_t max_bytes = 200);
// A string as a JSON string literal (quotes included), for the few fields written by hand.
std::string json_string(const std::string& text);

}  // namespace slicestream
