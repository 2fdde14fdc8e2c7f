#include "kernels/half_float.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/executor.hpp"

#if defined(__AVX__) || defined(__F16C__)
#include <immintrin.h>
#endif

namespace slicestream {

namespace {

constexpr std::uint32_t kFloatInfinity = 0x7f800000u;
constexpr std::uint32_t kHalfInfinity = 0x7c00u;
constexpr std::uint32_t kHalfQuietNan = 0x0200u;
// 65520 = 65504 + half a unit in the last place: it and everything above round to infinity.
constexpr std::uint32_t kFloatRoundsToHalfInfinity = 0x477ff000u;
constexpr std::uint32_t kFloatSmallestHalfNormal = 0x38800000u;           // 2^-14
constexpr std::uint32_t kFloatHalfOfSmallestHalfSubnormal = 0x33000000u;  // 2^-25
constexpr std::uint32_t kExponentRebias = (127u - 15u) << 23;

std::uint32_t bits_of(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Drops the `shift` low bits of `value`, rounding to nearest with ties to even.
std::uint32_t round_shift(std::uint32_t value, int shift) {
  const std::uint32_t kept = value >> shift;
  const std::uint32_t rest = value & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

}  // namespace

std::uint16_t float_to_half(float value) {
  const std::uint32_t bits = bits_of(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  std::uint32_t half = 0;
  if (magnitude >= kFloatInfinity) {
    half = kHalfInfinity | (magnitude > kFloatInfinity ? kHalfQuietNan : 0u);
  } else if (magnitude >= kFloatRoundsToHalfInfinity) {
    half = kHalfInfinity;
  } else if (magnitude >= kFloatSmallestHalfNormal) {
    // A carry out of the mantissa correctly moves to the next exponent.
    half = round_shift(magnitude - kExponentRebias, 13);
  } else if (magnitude > kFloatHalfOfSmallestHalfSubnormal) {
    // Subnormal: the value in units of 2^-24, rounded (1024 becomes the smallest normal).
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    half = round_shift(mantissa, static_cast<int>(126u - exponent));
  }
  return static_cast<std::uint16_t>(sign | half);
}

float half_to_float(std::uint16_t half) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(half) & 0x8000u) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1fu;
  std::uint32_t mantissa = half & 0x3ffu;
  std::uint32_t bits = 0;
  if (exponent == 0x1fu) {
    bits = sign | kFloatInfinity | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa != 0) {
    // Subnormal half: normalise.
    std::uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  } else {
    bits = sign;
  }
  float value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

void floats_to_halves(const float* values, std::size_t count, float factor, void* out) {
  auto* bytes = static_cast<unsigned char*>(out);
  std::size_t i = 0;
#if defined(__F16C__)
  const __m256 scale = _mm256_set1_ps(factor);
  for (; i + 8 <= count; i += 8) {
    const __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(values + i), scale);
    const __m128i halves = _mm256_cvtps_ph(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes + 2 * i), halves);
  }
#endif
  for (; i < count; ++i) {
    const std::uint16_t half = float_to_half(values[i] * factor);
    std::memcpy(bytes + 2 * i, &half, sizeof half);
  }
}

void halves_to_floats(const void* halves, std::size_t count, float factor, float* out) {
  const auto* bytes = static_cast<const unsigned char*>(halves);
  std::size_t i = 0;
#if defined(__F16C__)
  const __m256 scale = _mm256_set1_ps(factor);
  for (; i + 8 <= count; i += 8) {
    const __m128i eight = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 2 * i));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_cvtph_ps(eight), scale));
  }
#endif
  for (; i < count; ++i) {
    std::uint16_t half = 0;
    std::memcpy(&half, bytes + 2 * i, sizeof half);
    out[i] = half_to_float(half) * factor;
  }
}

namespace {

// Values per chunk of the parallel passes: 1 MiB of floats, many chunks per large image.
constexpr std::size_t kHalfImageChunk = std::size_t{1} << 18;

// The largest finite magnitude among `count` values, 0 when there is none.
float largest_finite_magnitude(const float* values, std::size_t count) {
  float largest = 0;
  std::size_t i = 0;
#if defined(__AVX__)
  // |v| where it is finite, else 0 (a NaN compares false), in eight lanes.
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 infinity = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 lanes = _mm256_setzero_ps();
  for (; i + 8 <= count; i += 8) {
    const __m256 magnitude = _mm256_andnot_ps(sign, _mm256_loadu_ps(values + i));
    const __m256 finite = _mm256_cmp_ps(magnitude, infinity, _CMP_LT_OQ);
    lanes = _mm256_max_ps(lanes, _mm256_and_ps(magnitude, finite));
  }
  alignas(32) float lane[8];
  _mm256_store_ps(lane, lanes);
  largest = *std::max_element(lane, lane + 8);
#endif
  for (; i < count; ++i) {
    if (std::isfinite(values[i])) largest = std::max(largest, std::abs(values[i]));
  }
  return largest;
}

}  // namespace

float half_image_scale(const float* values, std::size_t count) {
  const float largest = largest_finite_magnitude(values, count);
  return largest > 0 ? largest : 1.0f;
}

float half_image_scale(const float* values, std::size_t count, Executor& executor) {
  std::vector<float> largest(static_cast<std::size_t>(executor.max_participants()), 0.0f);
  executor.parallel_for(
      count, kHalfImageChunk, [&](std::size_t begin, std::size_t end, int participant) {
        float& mine = largest[static_cast<std::size_t>(participant)];
        mine = std::max(mine, largest_finite_magnitude(values + begin, end - begin));
      });
  const float overall = *std::max_element(largest.begin(), largest.end());
  return overall > 0 ? overall : 1.0f;
}

void floats_to_halves(const float* values, std::size_t count, float factor, void* out,
                      Executor& executor) {
  auto* bytes = static_cast<unsigned char*>(out);
  executor.parallel_for(count, kHalfImageChunk, [&](std::size_t begin, std::size_t end, int) {
    floats_to_halves(values + begin, end - begin, factor, bytes + 2 * begin);
  });
}

}  // namespace slicestream
