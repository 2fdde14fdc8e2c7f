// tomop packets <-> bytes: pure functions, no sockets (fuzz targets call decode_packet directly).
//
// decode_packet never reads outside [bytes, bytes + size), never allocates more than a bounded
// multiple of `size` (counts are checked against the bytes that remain before anything is
// reserved), and refuses trailing bytes. Refusals are WireErrors with a reason:
//   truncated_packet  the packet ends inside a field or string, or a count needs more bytes
//                     than are left (a packet under 4 bytes has no id)
//   trailing_bytes    bytes after the last field
//   unknown_packet    an id outside the protocol
//   bad_value         a negative count, a bool byte other than 0 or 1
//   oversized         a string over kMaxStringBytes, or more enum choices than kMaxEnumValues
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "server/codec/wire_error.hpp"
#include "server/tomop/tomop_packets.hpp"

namespace slicestream::tomop {

namespace reason {
inline constexpr const char* kTruncated = "truncated_packet";
inline constexpr const char* kTrailingBytes = "trailing_bytes";
inline constexpr const char* kUnknownPacket = "unknown_packet";
}  // namespace reason

inline constexpr std::size_t kMaxStringBytes = 4096;
inline constexpr std::size_t kMaxEnumValues = 256;

Decoded<Packet> decode_packet(const std::byte* bytes, std::size_t size);

// The packet id of a message, when it has one (4 bytes or more).
std::optional<std::int32_t> peek_packet_id(const std::byte* bytes, std::size_t size);

std::size_t encoded_size(const Packet& packet);
// Writes exactly encoded_size(packet) bytes at `out`.
void encode_into(const Packet& packet, std::byte* out);
std::vector<std::byte> encode(const Packet& packet);

}  // namespace slicestream::tomop
