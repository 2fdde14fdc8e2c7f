// A CPU model of the tensor cores' fp32 accumulation (kernels/tensorcore/mma_accumulation.hpp
// describes the arithmetic): with `emulate` on, one MMA k-step forms its fp16 x fp16 products
// exactly, aligns them and the fp32 accumulator to the largest exponent among them, truncates
// every aligned significand below 24 + extra_bits bits, adds exactly and rounds the sum toward
// zero to fp32. The CPU twins of the products (bsr_multiply_cpu.hpp) sum exactly (in double)
// without it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/tensorcore/mma_accumulation.hpp"

namespace slicestream::tensorcore {

struct MmaAccumulation {
  bool emulate = false;    // false: exact sums (double); true: the tensor core model above
  int step_products = 16;  // products fused per MMA k-step (16 for HMMA.16816, 8 for .1688)
  int extra_bits = 0;      // alignment bits kept beyond fp32's 24-bit significand
  int chain_blocks = 0;    // blocks per chain; 0: one chain per output (no split)
};

// The model of one k-step: acc + sum of products[0..count) with alignment to the largest exponent,
// truncation below `keep_bits` significant bits and round-toward-zero to fp32. Products are exact
// doubles (fp16 x fp16 has 22 significant bits).
namespace mma_model {

inline int exponent_of(double value) {  // floor(log2 |value|) of a normal, non-zero double
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<int>((bits >> 52) & 0x7ffu) - 1023;
}

inline double power_of_two(int exponent) {  // 2^exponent for -1022 <= exponent <= 1023
  const std::uint64_t bits = static_cast<std::uint64_t>(exponent + 1023) << 52;
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline float round_toward_zero(double value) {
  float f = static_cast<float>(value);
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) f = std::nextafter(f, 0.0f);
  return f;
}

inline float step(float acc, const double* products, int count, int keep_bits) {
  int top = acc != 0.0f ? exponent_of(static_cast<double>(acc)) : -2000;
  for (int i = 0; i < count; ++i) {
    if (products[i] != 0.0) {
      const int e = exponent_of(products[i]);
      top = e > top ? e : top;
    }
  }
  if (top == -2000) return acc;
  // Keep the bits from 2^top down to 2^(top - keep_bits + 1); the sum of at most 33 such terms
  // is exact in double.
  const int low = top - keep_bits + 1;
  const double quantum = power_of_two(low);
  const double inverse = power_of_two(-low);
  double sum = std::trunc(static_cast<double>(acc) * inverse) * quantum;
  for (int i = 0; i < count; ++i)
    sum += std::trunc(products[i] * inverse) * quantum;
  return round_toward_zero(sum);
}

}  // namespace mma_model

}  // namespace slicestream::tensorcore
