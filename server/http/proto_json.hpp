// slicestream.v1 messages as JSON for the browser (protobuf's JSON mapping: field names as in
// the .proto, enums by name, 64-bit integers as strings, fields at their default printed).
#pragma once

#include <string>

#include <google/protobuf/message.h>

namespace slicestream {

std::string to_json(const google::protobuf::Message& message);
// Fills `message` from `json`; empty when it worked, else the parser's complaint. Unknown
// fields are refused.
std::string from_json(const std::string& json, google::protobuf::Message* message);
// A string as a JSON string literal (quotes included), for the few fields written by hand. This
// is JSON encoding, not the escaping of wire text: a string from the wire goes through
// escape_wire_text (wire/wire_text.hpp) first, then through this or to_json like any other.
std::string json_string(const std::string& text);

}  // namespace slicestream
