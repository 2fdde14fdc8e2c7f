// Where an expression is evaluated: a flat position, optionally with its (row, col) in a 2D image.
//
// Array leaves read element `flat`; index-aware generators (e.g. the FDK cosine weight) read
// `row` and `col`. A generator has no meaning on a 1D range, so it only accepts Index2D: putting
// one into an expression evaluated over plain std::size_t indices fails to compile instead of
// silently reading row 0.
#pragma once

#include <cstddef>

#include "kernels/host_device.hpp"

namespace slicestream::expr {

struct Index2D {
  std::size_t flat;
  int row;
  int col;
};

// A row-major image of rows x cols elements.
struct Extent2D {
  int rows = 0;
  int cols = 0;

  SLICESTREAM_INLINE std::size_t size() const {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  }
  // For device kernels launched over flat indices (one division per thread). The host evaluator
  // walks rows and columns directly and never divides.
  SLICESTREAM_INLINE Index2D index(std::size_t flat) const {
    const std::size_t width = static_cast<std::size_t>(cols);
    const std::size_t row = flat / width;
    return {flat, static_cast<int>(row), static_cast<int>(flat - row * width)};
  }
};

SLICESTREAM_INLINE std::size_t flat_of(std::size_t index) {
  return index;
}
SLICESTREAM_INLINE std::size_t flat_of(const Index2D& index) {
  return index.flat;
}

}  // namespace slicestream::expr
