#include "clients/detector/detector_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace slicestream::detector {
namespace {

std::vector<float> random_line_integrals(std::size_t n, unsigned seed, double max_value) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.0f, static_cast<float>(max_value));
  std::vector<float> values(n);
  for (float& v : values)
    v = dist(rng);
  return values;
}

TEST(DetectorModel, NoiselessCountsFollowBeerLambertInEveryPixelType) {
  const DetectorShape shape{17, 23};
  const std::vector<float> p = random_line_integrals(shape.pixels(), 7, 3.0);
  for (PixelType type : {PixelType::kFloat32, PixelType::kUint32, PixelType::kUint16}) {
    DetectorModel model;
    model.pixel_type = type;
    model.flat_counts = 25000;
    model.dark_counts = 120;
    PixelBuffer frame(type, shape);
    expose(model, p.data(), true, 0, frame);
    const double tolerance = type == PixelType::kFloat32 ? 1e-3 : 0.5 + 1e-9;
    for (std::size_t i = 0; i < shape.pixels(); ++i) {
      const double expected = 120 + 25000 * std::exp(-static_cast<double>(p[i]));
      ASSERT_NEAR(load_pixel(type, frame.bytes.data(), i), expected, tolerance)
          << to_string(type) << " pixel " << i;
    }
  }
}

TEST(DetectorModel, DarkAndFlatFramesHoldTheirLevels) {
  DetectorModel model;
  model.flat_counts = 1234;
  model.dark_counts = 56;
  PixelBuffer dark(PixelType::kUint16, {4, 5});
  PixelBuffer flat(PixelType::kUint16, {4, 5});
  expose(model, nullptr, false, 0, dark);
  expose(model, nullptr, true, 0, flat);
  for (std::size_t i = 0; i < dark.pixels(); ++i) {
    EXPECT_EQ(load_pixel(PixelType::kUint16, dark.bytes.data(), i), 56);
    EXPECT_EQ(load_pixel(PixelType::kUint16, flat.bytes.data(), i), 56 + 1234);
  }
}

TEST(DetectorModel, Uint16SaturatesInsteadOfWrapping) {
  std::byte data[8];
  store_pixel(PixelType::kUint16, data, 0, 70000.0);
  store_pixel(PixelType::kUint16, data, 1, -5.0);
  store_pixel(PixelType::kUint16, data, 2, std::nan(""));
  store_pixel(PixelType::kUint16, data, 3, 41.6);
  EXPECT_EQ(load_pixel(PixelType::kUint16, data, 0), 65535);
  EXPECT_EQ(load_pixel(PixelType::kUint16, data, 1), 0);
  EXPECT_EQ(load_pixel(PixelType::kUint16, data, 2), 0);
  EXPECT_EQ(load_pixel(PixelType::kUint16, data, 3), 42);
  std::byte wide[4];
  store_pixel(PixelType::kUint32, wide, 0, 1e12);
  EXPECT_EQ(load_pixel(PixelType::kUint32, wide, 0), 4294967295.0);
}

// Sample mean and variance of (counts - dark) over a frame whose every pixel has the same mean.
struct Moments {
  double mean = 0;
  double variance = 0;
  double zero_fraction = 0;
};

Moments flat_field_moments(double photons_per_pixel, std::uint64_t seed) {
  const DetectorShape shape{256, 256};
  DetectorModel model;
  model.pixel_type = PixelType::kUint32;
  model.flat_counts = 5000;
  model.dark_counts = 40;
  model.poisson_noise = true;
  model.seed = seed;
  // Line integral that leaves `photons_per_pixel` of the 5000 open-beam photons.
  std::vector<float> p(shape.pixels(), static_cast<float>(std::log(5000.0 / photons_per_pixel)));
  PixelBuffer frame(model.pixel_type, shape);
  expose(model, p.data(), true, noise_stream_key(FrameKind::kProjection, 3), frame);
  double sum = 0;
  double sum_sq = 0;
  std::size_t zeros = 0;
  const double n = static_cast<double>(shape.pixels());
  for (std::size_t i = 0; i < shape.pixels(); ++i) {
    const double k = load_pixel(model.pixel_type, frame.bytes.data(), i) - 40;
    sum += k;
    sum_sq += k * k;
    zeros += k == 0;
  }
  Moments m;
  m.mean = sum / n;
  m.variance = (sum_sq - sum * sum / n) / (n - 1);
  m.zero_fraction = static_cast<double>(zeros) / n;
  return m;
}

TEST(DetectorModel, PoissonNoiseHasPoissonMeanAndVariance) {
  const double n = 256.0 * 256.0;
  for (double lambda : {1000.0, 3.0}) {
    // Actual float32 mean after exp(-log(...)) round trip.
    const double mean =
        5000.0 * std::exp(-static_cast<double>(static_cast<float>(std::log(5000.0 / lambda))));
    const Moments m = flat_field_moments(lambda, 11);
    // 5 standard errors: of the mean sqrt(lambda/n); of the variance ~ lambda sqrt(2/n + 1/(lambda
    // n)).
    EXPECT_NEAR(m.mean, mean, 5 * std::sqrt(mean / n)) << "lambda " << lambda;
    EXPECT_NEAR(m.variance, mean, 5 * mean * std::sqrt(2 / n + 1 / (mean * n)))
        << "lambda " << lambda;
    if (lambda < 10) {
      // A Gaussian would almost never give exactly zero; Poisson gives e^-lambda of the time.
      const double p0 = std::exp(-mean);
      EXPECT_NEAR(m.zero_fraction, p0, 5 * std::sqrt(p0 * (1 - p0) / n));
    }
  }
}

TEST(DetectorModel, NoiseIsReproduciblePerSeedAndFrame) {
  DetectorModel model;
  model.poisson_noise = true;
  model.seed = 99;
  const DetectorShape shape{8, 9};
  const std::vector<float> p = random_line_integrals(shape.pixels(), 3, 2.0);
  auto render = [&](std::uint64_t seed, std::uint64_t key) {
    DetectorModel m = model;
    m.seed = seed;
    PixelBuffer frame(m.pixel_type, shape);
    expose(m, p.data(), true, key, frame);
    return frame.bytes;
  };
  const std::uint64_t key = noise_stream_key(FrameKind::kProjection, 5);
  EXPECT_EQ(render(99, key), render(99, key));
  EXPECT_NE(render(99, key), render(99, noise_stream_key(FrameKind::kProjection, 6)));
  EXPECT_NE(render(99, key), render(100, key));
  EXPECT_NE(noise_stream_key(FrameKind::kFlat, 5), key);
}

TEST(DetectorModel, AlreadyLinearSendsLineIntegrals) {
  const DetectorShape shape{64, 64};
  const std::vector<float> p = random_line_integrals(shape.pixels(), 5, 2.5);
  DetectorModel model;
  model.already_linear = true;
  model.flat_counts = 1e6;
  ASSERT_EQ(model.wire_pixel_type(), PixelType::kFloat32);
  PixelBuffer exact(PixelType::kFloat32, shape);
  expose(model, p.data(), true, 0, exact);
  for (std::size_t i = 0; i < shape.pixels(); ++i) {
    ASSERT_EQ(load_pixel(PixelType::kFloat32, exact.bytes.data(), i), p[i]);
  }
  // Noisy line integrals: unbiased to first order with a million photons per pixel.
  model.poisson_noise = true;
  PixelBuffer noisy(PixelType::kFloat32, shape);
  expose(model, p.data(), true, 1, noisy);
  double mean_error = 0;
  double max_error = 0;
  for (std::size_t i = 0; i < shape.pixels(); ++i) {
    const double error = load_pixel(PixelType::kFloat32, noisy.bytes.data(), i) - p[i];
    mean_error += error / static_cast<double>(shape.pixels());
    max_error = std::max(max_error, std::abs(error));
  }
  EXPECT_GT(max_error, 1e-4);  // noise is there
  EXPECT_LT(max_error, 0.05);  // of the expected size: 1/sqrt(I0 e^-p) <= 0.0035, 6 sigma < 0.03
  EXPECT_NEAR(mean_error, 0, 5e-4);
}

TEST(PixelBuffer, FlipRowsReversesRowOrder) {
  PixelBuffer frame(PixelType::kUint16, {3, 2});
  for (std::size_t i = 0; i < 6; ++i)
    store_pixel(frame.type, frame.bytes.data(), i, static_cast<double>(i));
  flip_rows(frame);
  const double expected[6] = {4, 5, 2, 3, 0, 1};
  for (std::size_t i = 0; i < 6; ++i)
    EXPECT_EQ(load_pixel(frame.type, frame.bytes.data(), i), expected[i]);
}

}  // namespace
}  // namespace slicestream::detector
