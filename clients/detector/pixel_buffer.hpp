// One detector frame's pixels as they go on the wire, and the conversions into the wire types.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/frame_view.hpp"

namespace slicestream::detector {

struct PixelBuffer {
  PixelType type = PixelType::kUint16;
  DetectorShape shape;
  std::vector<std::byte> bytes;  // shape.pixels() values of `type`, row-major, row 0 first

  PixelBuffer() = default;
  PixelBuffer(PixelType pixel_type, DetectorShape detector_shape);
  std::size_t pixels() const { return shape.pixels(); }
};

// Stores `value` as pixel `index` of a `type` array: integer types are rounded to the nearest
// integer and clamped to their range (a real detector saturates, it does not wrap around);
// float32 is stored as is.
void store_pixel(PixelType type, std::byte* data, std::size_t index, double value);

// Reads pixel `index` of a `type` array as a double (tests and conversions).
double load_pixel(PixelType type, const std::byte* data, std::size_t index);

// Reverses the row order in place: files that store row 0 at the top become ASTRA's bottom-up v.
void flip_rows(PixelBuffer& frame);

}  // namespace slicestream::detector
