// IEEE 754 binary16 conversions on the host, bit-exact with CUDA's __float2half_rn (round to
// nearest, ties to even; overflow to infinity; subnormals kept) and __half2float. The CPU
// library has no CUDA headers, and the fp16 BSR blocks are built on the CPU.
#pragma once

#include <cstdint>
#include <cstring>

namespace slicestream::tensorcore {

inline std::uint16_t float_to_half_bits(float value) {
  std::uint32_t f;
  std::memcpy(&f, &value, sizeof f);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // < 2^-25 rounds to 0
    const std::uint32_t exponent = abs >> 23;
    const std::uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exponent;
    // value = mantissa * 2^(exponent - 150); half subnormal unit = 2^-24.
    // half bits = mantissa * 2^(exponent - 150 + 24) = mantissa >> (126 - exponent).
    const std::uint32_t bits = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t half_point = 1u << (shift - 1u);
    const std::uint32_t rounded =
        bits + ((rest > half_point || (rest == half_point && (bits & 1u))) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits.
  const std::uint32_t rebased = abs - 0x38000000u;
  const std::uint32_t bits = rebased >> 13;
  const std::uint32_t rest = rebased & 0x1fffu;
  const std::uint32_t rounded =
      bits + ((rest > 0x1000u || (rest == 0x1000u && (bits & 1u))) ? 1u : 0u);
  return static_cast<std::uint16_t>(sign | rounded);
}

inline float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t f;
  if (exponent == 0x1fu) {
    f = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    f = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    f = sign;
  } else {  // subnormal: normalise
    std::uint32_t e = 113u;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    f = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  std::memcpy(&value, &f, sizeof value);
  return value;
}

}  // namespace slicestream::tensorcore
