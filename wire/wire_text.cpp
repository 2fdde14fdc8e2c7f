#include "wire/wire_text.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace slicestream {
namespace {

// One UTF-8 sequence at the start of `text`: its code point and length, or length 0 when the
// bytes there are not valid UTF-8 (RFC 3629: shortest form, no surrogates, at most U+10FFFF).
struct Decoded {
  std::uint32_t code_point = 0;
  std::size_t length = 0;
};

Decoded decode_utf8(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {lead, 1};
  std::size_t length = 0;
  std::uint32_t code_point = 0;
  std::uint32_t smallest = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code_point = lead & 0x1F, smallest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code_point = lead & 0x0F, smallest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code_point = lead & 0x07, smallest = 0x10000;
  } else {
    return {};
  }
  if (text.size() < length) return {};
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return {};
    code_point = (code_point << 6) | (byte(i) & 0x3F);
  }
  const bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
  if (code_point < smallest || surrogate || code_point > 0x10FFFF) return {};
  return {code_point, length};
}

// Characters that are valid UTF-8 but change how the text around them reads.
bool is_invisible_control(std::uint32_t c) {
  return (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F ||
         (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) || c == 0x2028 ||
         c == 0x2029 || c == 0xFEFF;
}

void append_hex_byte(std::string& out, unsigned char byte) {
  char escaped[8];
  std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
  out += escaped;
}

void append_code_point(std::string& out, std::uint32_t code_point) {
  char escaped[12];
  std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(code_point));
  out += escaped;
}

void append_ascii(std::string& out, unsigned char c) {
  switch (c) {
    case '\\':
      out += "\\\\";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      break;
  }
  if (c < 0x20 || c == 0x7F) {
    append_hex_byte(out, c);
  } else {
    out += static_cast<char>(c);
  }
}

}  // namespace

std::string escape_wire_text(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  std::size_t i = 0;
  while (i < text.size()) {
    const Decoded d = decode_utf8(text.substr(i));
    const std::size_t length = d.length == 0 ? 1 : d.length;
    if (i + length > max_bytes) break;
    if (d.length == 0) {
      append_hex_byte(out, static_cast<unsigned char>(text[i]));
    } else if (d.length == 1) {
      append_ascii(out, static_cast<unsigned char>(text[i]));
    } else if (is_invisible_control(d.code_point)) {
      append_code_point(out, d.code_point);
    } else {
      out.append(text.substr(i, d.length));
    }
    i += length;
  }
  if (i < text.size()) out += "...(" + std::to_string(text.size() - i) + " more bytes)";
  return out;
}

}  // namespace slicestream
