#include "clients/detector/pixel_buffer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace slicestream::detector {

namespace {

template <typename Int>
Int round_and_clamp(double value) {
  constexpr double kMax = static_cast<double>(std::numeric_limits<Int>::max());
  if (!(value > 0)) return 0;  // also maps NaN to 0: a saturating detector never reports NaN
  if (value >= kMax) return std::numeric_limits<Int>::max();
  return static_cast<Int>(std::lround(value));
}

template <typename T>
void store_as(std::byte* data, std::size_t index, T value) {
  std::memcpy(data + index * sizeof(T), &value, sizeof(T));
}

template <typename T>
T load_as(const std::byte* data, std::size_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

PixelBuffer::PixelBuffer(PixelType pixel_type, DetectorShape detector_shape)
    : type(pixel_type),
      shape(detector_shape),
      bytes(detector_shape.pixels() * pixel_bytes(pixel_type)) {}

void store_pixel(PixelType type, std::byte* data, std::size_t index, double value) {
  switch (type) {
    case PixelType::kUint16:
      store_as(data, index, round_and_clamp<std::uint16_t>(value));
      return;
    case PixelType::kUint32:
      store_as(data, index, round_and_clamp<std::uint32_t>(value));
      return;
    case PixelType::kFloat32:
      store_as(data, index, static_cast<float>(value));
      return;
  }
}

double load_pixel(PixelType type, const std::byte* data, std::size_t index) {
  switch (type) {
    case PixelType::kUint16:
      return load_as<std::uint16_t>(data, index);
    case PixelType::kUint32:
      return load_as<std::uint32_t>(data, index);
    case PixelType::kFloat32:
      return load_as<float>(data, index);
  }
  return 0;
}

void flip_rows(PixelBuffer& frame) {
  const std::size_t row_bytes =
      static_cast<std::size_t>(frame.shape.cols) * pixel_bytes(frame.type);
  for (int top = 0, bottom = frame.shape.rows - 1; top < bottom; ++top, --bottom) {
    std::swap_ranges(frame.bytes.begin() + static_cast<std::ptrdiff_t>(top * row_bytes),
                     frame.bytes.begin() + static_cast<std::ptrdiff_t>((top + 1) * row_bytes),
                     frame.bytes.begin() + static_cast<std::ptrdiff_t>(bottom * row_bytes));
  }
}

}  // namespace slicestream::detector
