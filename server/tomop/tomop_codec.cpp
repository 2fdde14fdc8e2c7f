#include "server/tomop/tomop_codec.hpp"

#include <cstdio>
#include <string>
#include <utility>

namespace slicestream::tomop {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tomop is little-endian on the wire");

namespace {

constexpr std::size_t kIdBytes = sizeof(std::int32_t);

std::string hex(std::int32_t id) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", static_cast<unsigned>(id));
  return text;
}

// Reads fields in order; the first problem stops it (later fields read nothing).
class Reader {
 public:
  Reader(const std::byte* bytes, std::size_t size) : bytes_(bytes), size_(size), pos_(kIdBytes) {}

  void operator()(std::int32_t& value) { raw(&value, sizeof value); }
  void operator()(float& value) { raw(&value, sizeof value); }
  void operator()(bool& value) {
    std::uint8_t byte = 0;
    raw(&byte, 1);
    if (byte > 1) fail(wire_reason::kBadValue, "a bool byte is " + std::to_string(byte));
    value = byte == 1;
  }
  template <typename T, std::size_t N>
  void operator()(std::array<T, N>& values) {
    for (T& value : values)
      (*this)(value);
  }
  void operator()(std::string& text) {
    if (error_) return;
    const std::size_t limit = std::min(size_ - pos_, kMaxStringBytes + 1);
    const void* nul = std::memchr(bytes_ + pos_, 0, limit);
    if (nul == nullptr) {
      if (limit > kMaxStringBytes) {
        fail(wire_reason::kOversized,
             "a string is longer than " + std::to_string(kMaxStringBytes) + " bytes");
      } else {
        fail(reason::kTruncated, "the packet ends inside a string");
      }
      return;
    }
    const auto length =
        static_cast<std::size_t>(static_cast<const std::byte*>(nul) - (bytes_ + pos_));
    text.assign(reinterpret_cast<const char*>(bytes_ + pos_), length);
    pos_ += length + 1;
  }
  void operator()(FloatView& view) {
    const std::size_t count = element_count(sizeof(float));
    if (error_) return;
    view = {bytes_ + pos_, count};
    pos_ += count * sizeof(float);
  }
  void operator()(std::vector<std::string>& values) {
    // Each string takes at least its NUL, so the bytes left bound the count.
    const std::size_t count = element_count(1);
    if (error_) return;
    if (count > kMaxEnumValues) {
      fail(wire_reason::kOversized,
           std::to_string(count) + " strings (at most " + std::to_string(kMaxEnumValues) + ")");
      return;
    }
    values.resize(count);
    for (std::string& value : values)
      (*this)(value);
  }
  void optional_last(bool& value, bool& present) {
    present = !error_ && pos_ < size_;
    if (present) (*this)(value);
  }

  std::optional<WireError> finish(std::int32_t id) {
    if (!error_ && pos_ != size_) {
      fail(reason::kTrailingBytes, std::to_string(size_ - pos_) + " bytes after the last field");
    }
    if (error_) error_->message = packet_name(id) + ": " + error_->message;
    return error_;
  }

 private:
  void fail(const char* why, std::string message) {
    if (!error_) error_ = invalid(why, std::move(message));
  }
  void raw(void* out, std::size_t count) {
    if (error_) return;
    if (size_ - pos_ < count) {
      fail(reason::kTruncated, "the packet ends inside a field at byte " + std::to_string(pos_) +
                                   " of " + std::to_string(size_));
      return;
    }
    std::memcpy(out, bytes_ + pos_, count);
    pos_ += count;
  }
  // An int32 count, checked against the bytes left for elements of `element_bytes` each.
  std::size_t element_count(std::size_t element_bytes) {
    std::int32_t count = 0;
    raw(&count, sizeof count);
    if (error_) return 0;
    if (count < 0) {
      fail(wire_reason::kBadValue, "a negative count (" + std::to_string(count) + ")");
      return 0;
    }
    const auto n = static_cast<std::size_t>(count);
    if (n > (size_ - pos_) / element_bytes) {
      fail(reason::kTruncated, "a count of " + std::to_string(n) + " needs more than the " +
                                   std::to_string(size_ - pos_) + " bytes left");
      return 0;
    }
    return n;
  }

  const std::byte* bytes_;
  std::size_t size_;
  std::size_t pos_;
  std::optional<WireError> error_;
};

class SizeCounter {
 public:
  void operator()(const std::int32_t&) { size += 4; }
  void operator()(const float&) { size += 4; }
  void operator()(const bool&) { size += 1; }
  template <typename T, std::size_t N>
  void operator()(const std::array<T, N>&) {
    size += N * 4;
  }
  void operator()(const std::string& text) { size += text.size() + 1; }
  void operator()(const FloatView& view) { size += 4 + view.count * sizeof(float); }
  void operator()(const std::vector<std::string>& values) {
    size += 4;
    for (const std::string& value : values)
      (*this)(value);
  }
  void optional_last(const bool& value, const bool& present) {
    if (present) (*this)(value);
  }
  std::size_t size = kIdBytes;
};

class Writer {
 public:
  explicit Writer(std::byte* out) : out_(out) {}
  void operator()(const std::int32_t& value) { raw(&value, sizeof value); }
  void operator()(const float& value) { raw(&value, sizeof value); }
  void operator()(const bool& value) {
    const std::uint8_t byte = value ? 1 : 0;
    raw(&byte, 1);
  }
  template <typename T, std::size_t N>
  void operator()(const std::array<T, N>& values) {
    for (const T& value : values)
      (*this)(value);
  }
  void operator()(const std::string& text) { raw(text.c_str(), text.size() + 1); }
  void operator()(const FloatView& view) {
    (*this)(static_cast<std::int32_t>(view.count));
    if (view.count > 0) raw(view.bytes, view.count * sizeof(float));
  }
  void operator()(const std::vector<std::string>& values) {
    (*this)(static_cast<std::int32_t>(values.size()));
    for (const std::string& value : values)
      (*this)(value);
  }
  void optional_last(const bool& value, const bool& present) {
    if (present) (*this)(value);
  }

 private:
  void raw(const void* bytes, std::size_t count) {
    std::memcpy(out_, bytes, count);
    out_ += count;
  }
  std::byte* out_;
};

template <typename P>
Decoded<Packet> decode_as(const std::byte* bytes, std::size_t size) {
  P packet;
  Reader reader(bytes, size);
  P::fields(packet, reader);
  if (auto error = reader.finish(static_cast<std::int32_t>(P::kId))) return std::move(*error);
  return Packet(std::move(packet));
}

// Tries every alternative of Packet in turn; the one whose id matches decodes.
template <std::size_t I = 0>
Decoded<Packet> decode_by_id(std::int32_t id, const std::byte* bytes, std::size_t size) {
  if constexpr (I == std::variant_size_v<Packet>) {
    return invalid(reason::kUnknownPacket,
                   "unknown packet id " + hex(id) + " (" + std::to_string(size) + " bytes)");
  } else {
    using P = std::variant_alternative_t<I, Packet>;
    if (static_cast<std::int32_t>(P::kId) == id) return decode_as<P>(bytes, size);
    return decode_by_id<I + 1>(id, bytes, size);
  }
}

template <std::size_t I = 0>
std::string name_by_id(std::int32_t id) {
  if constexpr (I == std::variant_size_v<Packet>) {
    return "unknown (" + hex(id) + ")";
  } else {
    using P = std::variant_alternative_t<I, Packet>;
    if (static_cast<std::int32_t>(P::kId) != id) return name_by_id<I + 1>(id);
    static constexpr const char* kNames[] = {"MakeScene",
                                             "KillScene",
                                             "SliceData",
                                             "PartialSliceData",
                                             "VolumeData",
                                             "PartialVolumeData",
                                             "SetSlice",
                                             "RemoveSlice",
                                             "GroupRequestSlices",
                                             "GeometrySpecification",
                                             "ScanSettings",
                                             "ParallelBeamGeometry",
                                             "ParallelVecGeometry",
                                             "ConeBeamGeometry",
                                             "ConeVecGeometry",
                                             "ProjectionData",
                                             "PartialProjectionData",
                                             "Projection",
                                             "SetPart",
                                             "ParameterBool",
                                             "ParameterFloat",
                                             "ParameterEnum",
                                             "Tracker",
                                             "Benchmark"};
    static_assert(std::size(kNames) == std::variant_size_v<Packet>);
    return std::string(kNames[I]) + " (" + hex(id) + ")";
  }
}

}  // namespace

std::string packet_name(std::int32_t id) {
  return name_by_id(id);
}

std::optional<std::int32_t> peek_packet_id(const std::byte* bytes, std::size_t size) {
  if (size < kIdBytes) return std::nullopt;
  std::int32_t id;
  std::memcpy(&id, bytes, sizeof id);
  return id;
}

Decoded<Packet> decode_packet(const std::byte* bytes, std::size_t size) {
  const std::optional<std::int32_t> id = peek_packet_id(bytes, size);
  if (!id) {
    return invalid(reason::kTruncated,
                   "a packet of " + std::to_string(size) + " bytes has no 4-byte packet id");
  }
  return decode_by_id(*id, bytes, size);
}

std::size_t encoded_size(const Packet& packet) {
  return std::visit(
      [](const auto& p) {
        SizeCounter counter;
        std::decay_t<decltype(p)>::fields(p, counter);
        return counter.size;
      },
      packet);
}

void encode_into(const Packet& packet, std::byte* out) {
  std::visit(
      [out](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        Writer writer(out);
        writer(static_cast<std::int32_t>(P::kId));
        P::fields(p, writer);
      },
      packet);
}

std::vector<std::byte> encode(const Packet& packet) {
  std::vector<std::byte> bytes(encoded_size(packet));
  encode_into(packet, bytes.data());
  return bytes;
}

}  // namespace slicestream::tomop
