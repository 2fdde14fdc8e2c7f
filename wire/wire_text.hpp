// Strings from the wire made safe to log, store and echo: one helper for every endpoint (the
// native codecs, the tomop and RECAST3D codecs, the HTTP/WebSocket endpoint) and the clients,
// which print what a server sends.
//
// A string from the wire may hold anything: newlines that forge log lines, ANSI escape sequences
// that rewrite a terminal, bidirectional overrides that reorder what a reader sees, bytes that are
// not UTF-8. escape_wire_text keeps printable UTF-8 as it is and writes everything else as a
// visible escape, so the result is one line of valid UTF-8 that shows what arrived:
//   \\ for a backslash; \n \r \t; \xNN for other control bytes (C0, DEL) and for every byte that
//   is not part of valid UTF-8 (overlong forms, surrogates, truncated sequences, > U+10FFFF);
//   \uXXXX for C1 controls (U+0080..U+009F), bidirectional controls (U+061C, U+200E, U+200F,
//   U+202A..U+202E, U+2066..U+2069), the line and paragraph separators (U+2028, U+2029) and the
//   byte order mark (U+FEFF).
// Long strings are cut at a character boundary after `max_bytes` input bytes and end in
// "...(N more bytes)".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace slicestream {

// How much of a wire string a log line shows by default.
inline constexpr std::size_t kLoggedTextBytes = 256;

std::string escape_wire_text(std::string_view text, std::size_t max_bytes = kLoggedTextBytes);

}  // namespace slicestream
