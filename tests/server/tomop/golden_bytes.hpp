// Hand-written tomop byte strings: little-endian int32, float32, 1-byte bools, NUL-terminated
// strings, count-prefixed arrays. Built field by field from the protocol table
// (docs/recast3d.md), independently of server/tomop's encoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace slicestream::test {

class Bytes {
 public:
  Bytes& i32(std::int32_t value) { return raw(&value, 4); }
  Bytes& f32(float value) { return raw(&value, 4); }
  Bytes& boolean(bool value) {
    const std::uint8_t byte = value ? 1 : 0;
    return raw(&byte, 1);
  }
  Bytes& byte(std::uint8_t value) { return raw(&value, 1); }
  Bytes& str(const std::string& text) { return raw(text.c_str(), text.size() + 1); }
  Bytes& floats(const std::vector<float>& values) {
    i32(static_cast<std::int32_t>(values.size()));
    for (float value : values)
      f32(value);
    return *this;
  }
  const std::vector<std::byte>& get() const { return bytes_; }
  operator const std::vector<std::byte>&() const { return bytes_; }  // NOLINT: implicit

 private:
  Bytes& raw(const void* data, std::size_t count) {
    const auto* first = static_cast<const std::byte*>(data);
    bytes_.insert(bytes_.end(), first, first + count);
    return *this;
  }
  std::vector<std::byte> bytes_;
};

}  // namespace slicestream::test
