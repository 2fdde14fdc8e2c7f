// binary16 conversion: every half value survives a round trip, floats round to the nearest half
// (ties to even), and the edges (subnormals, overflow, infinities, NaN) behave as IEEE 754 says;
// the array conversions (vectorised where the target has F16C) give the same bits as the scalar
// ones; an image's fp16 scale is its largest finite magnitude; the passes in chunks give the
// results of one thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <vector>

#include "kernels/executor.hpp"
#include "kernels/half_float.hpp"

namespace slicestream {
namespace {

TEST(HalfFloat, EveryHalfRoundTrips) {
  for (std::uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const auto half = static_cast<std::uint16_t>(bits);
    const float value = half_to_float(half);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(value)))) << std::hex << bits;
    } else {
      EXPECT_EQ(float_to_half(value), half) << std::hex << bits << " " << value;
    }
  }
}

TEST(HalfFloat, DecodesKnownValues) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
}

// The nearest half by brute force among the neighbours of the converted value.
TEST(HalfFloat, RandomFloatsRoundToTheNearestHalf) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> exponent(-27, 15);  // below 2^15: no overflow
  std::uniform_real_distribution<float> mantissa(1, 2);
  for (int i = 0; i < 200000; ++i) {
    const float value =
        (i % 2 ? -1.0f : 1.0f) * std::ldexp(mantissa(random), static_cast<int>(exponent(random)));
    const std::uint16_t half = float_to_half(value);
    const double error = std::abs(static_cast<double>(half_to_float(half)) - value);
    for (int step : {-1, 1}) {
      const auto neighbour = static_cast<std::uint16_t>(half + step);
      const float other = half_to_float(neighbour);
      if (std::isnan(other) || (neighbour & 0x7fffu) == 0x7c00u) continue;
      const double other_error = std::abs(static_cast<double>(other) - value);
      ASSERT_LE(error, other_error) << value;
      if (error == other_error) {
        EXPECT_EQ(half & 1, 0) << "a tie must go to the even half: " << value;
      }
    }
  }
}

TEST(HalfFloat, Edges) {
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);  // below the midpoint to 65536: the largest half
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // the midpoint rounds to even: infinity
  EXPECT_EQ(float_to_half(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // a tie between 0 and 2^-24: even
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: tie to even 2
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(1e-30f), 0x0000);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14) * (1 - 1.0f / 4096)), 0x0400);  // rounds up
}

// Random bit patterns cover every class (normals, subnormals, overflow, infinities, NaN); the
// output starts at an odd byte and the count leaves a tail for the scalar loop.
TEST(HalfFloat, ArrayConversionGivesTheScalarBits) {
  std::mt19937 random(11);
  std::vector<float> values(100003);
  for (float& v : values) {
    const std::uint32_t bits = static_cast<std::uint32_t>(random());
    std::memcpy(&v, &bits, sizeof v);
  }
  for (float factor : {1.0f, 1.0f / 3.0f, 1e-4f}) {
    std::vector<unsigned char> bytes(2 * values.size() + 1);
    floats_to_halves(values.data(), values.size(), factor, bytes.data() + 1);
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::uint16_t half = 0;
      std::memcpy(&half, bytes.data() + 1 + 2 * i, sizeof half);
      const std::uint16_t expected = float_to_half(values[i] * factor);
      if (std::isnan(half_to_float(expected))) {
        ASSERT_TRUE(std::isnan(half_to_float(half))) << i;
      } else {
        ASSERT_EQ(half, expected) << i << " " << values[i] << " x " << factor;
      }
    }
  }
}

// Every binary16 value, read from an odd byte, with a count that leaves a tail for the scalar loop.
TEST(HalfFloat, ArrayDecodingGivesTheScalarValues) {
  std::vector<unsigned char> bytes(2 * 0x10000 + 1);
  for (std::uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const auto half = static_cast<std::uint16_t>(bits);
    std::memcpy(bytes.data() + 1 + 2 * bits, &half, sizeof half);
  }
  for (std::size_t count : {std::size_t{0x10000}, std::size_t{0xfffd}, std::size_t{5}}) {
    for (float factor : {1.0f, 3.5f, 1e-3f}) {
      std::vector<float> values(count, -1.0f);
      halves_to_floats(bytes.data() + 1, count, factor, values.data());
      for (std::size_t i = 0; i < count; ++i) {
        const float expected = half_to_float(static_cast<std::uint16_t>(i)) * factor;
        if (std::isnan(expected)) {
          ASSERT_TRUE(std::isnan(values[i])) << std::hex << i;
        } else {
          ASSERT_EQ(values[i], expected) << std::hex << i << " x " << factor;
        }
      }
    }
  }
}

TEST(HalfFloat, ImageScaleIsTheLargestFiniteMagnitude) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values = {0.5f, -3.25f, inf, std::nanf(""), 2.0f, -inf};
  EXPECT_EQ(half_image_scale(values.data(), values.size()), 3.25f);
  const std::vector<float> zeros(7, 0.0f);
  EXPECT_EQ(half_image_scale(zeros.data(), zeros.size()), 1.0f);  // nothing to scale
  EXPECT_EQ(half_image_scale(nullptr, 0), 1.0f);
  // Long enough for the vectorised loop and its tail, the largest anywhere, infinities and NaN
  // beside it.
  std::mt19937 random(5);
  std::uniform_real_distribution<float> value(-1, 1);
  for (std::size_t count : {9u, 64u, 1001u}) {
    std::vector<float> many(count);
    for (float& v : many)
      v = value(random);
    many[random() % count] = -7.5f;
    many[random() % count] = inf;
    many[random() % count] = std::nanf("");
    float expected = 0;
    for (float v : many)
      if (std::isfinite(v)) expected = std::max(expected, std::abs(v));
    EXPECT_EQ(half_image_scale(many.data(), many.size()), expected) << count;
  }
}

// Chunks on the calling thread, the last first, participants taking turns: the parallel passes
// must not depend on the order of the chunks or on which participant runs which.
class ReversedChunks final : public Executor {
 public:
  int max_participants() const override { return 3; }
  void parallel_for(std::size_t count, std::size_t grain, const RangeBody& body) override {
    for (std::size_t chunk = (count + grain - 1) / grain; chunk-- > 0;) {
      ++chunks_run;
      body(chunk * grain, std::min(count, (chunk + 1) * grain), static_cast<int>(chunk % 3));
    }
  }
  int chunks_run = 0;
};

TEST(HalfFloat, ChunkedPassesGiveTheOneThreadResults) {
  std::mt19937 random(13);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> values(1100003);  // several chunks and a short last one
  for (float& v : values)
    v = value(random);
  values[values.size() - 2] = -9.25f;  // the largest, in the last chunk
  values[5] = std::numeric_limits<float>::infinity();
  values[700000] = std::nanf("");
  ReversedChunks executor;
  const float scale = half_image_scale(values.data(), values.size(), executor);
  EXPECT_EQ(scale, 9.25f);
  EXPECT_EQ(scale, half_image_scale(values.data(), values.size()));
  EXPECT_GT(executor.chunks_run, 3);
  std::vector<unsigned char> one(2 * values.size() + 1), chunked(2 * values.size() + 1);
  floats_to_halves(values.data(), values.size(), 1.0f / scale, one.data() + 1);
  floats_to_halves(values.data(), values.size(), 1.0f / scale, chunked.data() + 1, executor);
  EXPECT_EQ(one, chunked);
  const std::vector<float> zeros(10, 0.0f);
  EXPECT_EQ(half_image_scale(zeros.data(), zeros.size(), executor), 1.0f);
  EXPECT_EQ(half_image_scale(nullptr, 0, executor), 1.0f);
}

}  // namespace
}  // namespace slicestream
