// Elementary functions for expression nodes that vectorise on the host.
//
// GCC only vectorises logf through glibc's SIMD variants, which it uses under -ffast-math alone;
// fast-math would also remove the is_finite guards of the preprocessing pass. So the host uses a
// branch-free logf (Cephes' polynomial, max error about 1 ulp on normal inputs) that GCC turns
// into SIMD code, and device code uses CUDA's logf.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/host_device.hpp"

namespace slicestream::expr {

SLICESTREAM_INLINE bool is_finite_value(float x) {
  // NaN fails the comparison; written without std::isfinite so that it vectorises everywhere.
  return fabsf(x) <= FLT_MAX;
}

#if !defined(__CUDA_ARCH__)
namespace detail {

inline std::uint32_t float_bits(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

inline float bits_float(std::uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// Natural logarithm, IEEE special cases included: log(+-0) = -inf, log(x < 0) = NaN,
// log(inf) = inf, log(NaN) = NaN. Subnormal inputs are scaled into the normal range first.
inline float host_log(float x) {
  constexpr float kSqrtHalf = 0.707106781186547524f;
  constexpr float kTwoPow23 = 8388608.0f;
  const bool subnormal = x < FLT_MIN;
  const float scaled = subnormal ? x * kTwoPow23 : x;
  const std::uint32_t bits = float_bits(scaled);
  // scaled = m * 2^e with m in [0.5, 1).
  const int exponent = static_cast<int>((bits >> 23) & 0xffu) - 126 - (subnormal ? 23 : 0);
  float m = bits_float((bits & 0x807fffffu) | 0x3f000000u);
  float e = static_cast<float>(exponent);
  // Fold m into [sqrt(1/2), sqrt(2)) so that the polynomial argument is small.
  const bool small = m < kSqrtHalf;
  e = small ? e - 1.0f : e;
  m = small ? m + m - 1.0f : m - 1.0f;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y += -2.12194440e-4f * e;
  y += -0.5f * z;
  float result = m + y + 0.693359375f * e;
  result = x == 0.0f ? -INFINITY : result;
  result = x < 0.0f ? NAN : result;
  result = x == INFINITY ? INFINITY : result;
  return x != x ? x : result;  // NaN in, NaN out
}

}  // namespace detail
#endif

SLICESTREAM_INLINE float log_value(float x) {
#if defined(__CUDA_ARCH__)
  return logf(x);
#else
  return detail::host_log(x);
#endif
}

}  // namespace slicestream::expr
