// A non-owning view of one raw detector frame as it arrived from the wire.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slicestream {

enum class PixelType : std::uint8_t { kUint16, kUint32, kFloat32 };

inline std::size_t pixel_bytes(PixelType type) {
  return type == PixelType::kUint16 ? 2 : 4;
}
const char* to_string(PixelType type);

// What a raw frame holds: a dark or flat field (calibration) or a projection. The server's
// pipeline and the detector simulator share it (wire/kernel_enums.hpp converts it).
enum class FrameKind { kDark, kFlat, kProjection };
const char* to_string(FrameKind kind);  // "dark", "flat", "projection"

struct DetectorShape {
  int rows = 0;  // v direction
  int cols = 0;  // u direction
  std::size_t pixels() const {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  }
};

inline bool operator==(DetectorShape a, DetectorShape b) {
  return a.rows == b.rows && a.cols == b.cols;
}
inline bool operator!=(DetectorShape a, DetectorShape b) {
  return !(a == b);
}

// Pixels are row-major, row 0 first, column fastest; `data` holds shape.pixels() values of `type`.
struct FrameView {
  const void* data = nullptr;
  PixelType type = PixelType::kUint16;
  DetectorShape shape;
  std::size_t bytes() const { return shape.pixels() * pixel_bytes(type); }
};

}  // namespace slicestream
