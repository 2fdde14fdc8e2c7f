// Strings from the wire, made safe to log: control characters and bytes outside printable ASCII
// become \xNN, and long ones are cut (a parameter name could hold anything).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace slicestream::tomop {

inline std::string printable(std::string_view text, std::size_t max_chars = 64) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_chars; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

}  // namespace slicestream::tomop
