// One fuzz input -> the message parts of a ZeroMQ multipart message, so that one byte string can
// drive decoders that take several parts. Layout: [u8 count] then, for every part but the last,
// [u32 little-endian length][bytes]; the last part is what remains. Short inputs make short parts.
// The seed writer (seed_writer.cpp) builds seeds with join_parts, so seeds and targets agree.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace slicestream::fuzz {

constexpr std::size_t kMaxParts = 4;

inline std::vector<std::string> split_parts(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> parts;
  if (size == 0) return parts;
  const std::size_t count = 1 + data[0] % kMaxParts;
  std::size_t at = 1;
  for (std::size_t i = 0; i + 1 < count; ++i) {
    std::uint32_t length = 0;
    for (std::size_t b = 0; b < 4 && at < size; ++b, ++at) {
      length |= static_cast<std::uint32_t>(data[at]) << (8 * b);
    }
    const std::size_t taken = std::min<std::size_t>(length, size - at);
    parts.emplace_back(reinterpret_cast<const char*>(data + at), taken);
    at += taken;
  }
  parts.emplace_back(reinterpret_cast<const char*>(data + at), size - at);
  return parts;
}

inline std::string join_parts(const std::vector<std::string>& parts) {
  std::string out(1, static_cast<char>(parts.size() - 1));
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const auto length = static_cast<std::uint32_t>(parts[i].size());
    for (int b = 0; b < 4; ++b)
      out.push_back(static_cast<char>((length >> (8 * b)) & 0xff));
    out += parts[i];
  }
  out += parts.back();
  return out;
}

}  // namespace slicestream::fuzz
