// Per-column power-of-two scaling of fp16 operands. Image and sinogram values (attenuation per mm,
// CG search directions) span many orders of magnitude; fp16 keeps 11 significant bits between
// 6.1e-5 and 65504. Each column is multiplied by 2^e so that its largest magnitude lies in
// [2^13, 2^14) before rounding to fp16 (exact scaling; the rounding is the only error), and
// products are multiplied by 2^-e afterwards. Host and device compute identical factors.
#pragma once

#include <cmath>

#include "kernels/host_device.hpp"

namespace slicestream::tensorcore {

// Compensated operands carry every column as two fp16 columns, hi = fp16(v) and
// lo = fp16((v - hi) * kLowOperandFactor): about 22 significant bits together.
inline constexpr float kLowOperandFactor = 4096.0f;

// The factor 2^e for a column whose largest magnitude is max_abs (1 for 0 or non-finite).
SLICESTREAM_INLINE float half_operand_scale(float max_abs) {
  if (!(max_abs > 0) || !(max_abs < 3.0e38f)) return 1.0f;
  int exponent = 0;
  frexpf(max_abs, &exponent);  // max_abs = m * 2^exponent, m in [0.5, 1)
  int e = 14 - exponent;
  e = e > 126 ? 126 : (e < -126 ? -126 : e);
  return ldexpf(1.0f, e);
}

}  // namespace slicestream::tensorcore
