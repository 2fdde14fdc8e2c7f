// ||A x - b|| / ||b|| from a computed A x, accumulated in double: the data-consistency number
// every SliceRefiner reports (||A x|| when b is zero, as cgls_cpu does).
#pragma once

#include <cmath>
#include <cstddef>

namespace slicestream {

inline double relative_residual(const float* ax, const float* b, std::size_t count) {
  double diff = 0;
  double norm = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double d = static_cast<double>(ax[i]) - static_cast<double>(b[i]);
    diff += d * d;
    norm += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

}  // namespace slicestream
