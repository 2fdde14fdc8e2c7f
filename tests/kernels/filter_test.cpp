// Ramp filter: names and sizes, the frequency response against |f| x window, the FFT filter
// against a direct float64 convolution with Kak & Slaney's kernel, the analytic filtered
// projection of a disc, linearity, and concurrent workers.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/cpu/ramp_filter_cpu.hpp"
#include "kernels/filter_config.hpp"
#include "tests/kernels/test_support.hpp"

namespace slicestream {
namespace {

using test::RandomSource;
constexpr double kPi = 3.14159265358979323846;

TEST(FilterConfig, WindowNamesRoundTripAndAliasesParse) {
  for (FilterWindow w : {FilterWindow::kRamLak, FilterWindow::kSheppLogan, FilterWindow::kCosine,
                         FilterWindow::kHamming, FilterWindow::kHann}) {
    ASSERT_EQ(parse_filter_window(to_string(w)), w);
  }
  EXPECT_STREQ(to_string(FilterWindow::kRamLak), "ram-lak");
  EXPECT_EQ(parse_filter_window("Ram_Lak"), FilterWindow::kRamLak);
  EXPECT_EQ(parse_filter_window("ramlak"), FilterWindow::kRamLak);
  EXPECT_EQ(parse_filter_window("SHEPP-LOGAN"), FilterWindow::kSheppLogan);
  EXPECT_EQ(parse_filter_window("hanning"), FilterWindow::kHann);
  EXPECT_FALSE(parse_filter_window("parzen").has_value());
  EXPECT_FALSE(parse_filter_window("").has_value());
}

bool is_7_smooth(int n) {
  for (int p : {2, 3, 5, 7}) {
    while (n % p == 0)
      n /= p;
  }
  return n == 1;
}

bool is_power_of_two(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

TEST(FilterConfig, PaddedWidthIsTheNextSmoothSizeOfTwiceTheWidthOrANearPowerOfTwo) {
  EXPECT_EQ(padded_filter_width(1), 2);
  EXPECT_EQ(padded_filter_width(600), 1200);  // 2^4 3 5^2; 2048 would be 1.7x as long
  EXPECT_EQ(padded_filter_width(512), 1024);
  EXPECT_EQ(padded_filter_width(1800), 4096);  // 3600 = 2^4 3^2 5^2; 4096 is 1.14x as long
  EXPECT_EQ(padded_filter_width(2000), 4096);  // 4000 = 2^5 5^3
  EXPECT_EQ(padded_filter_width(2053), 4116);  // 4106 = 2 x 2053 is prime-ish; 4116 = 2^2 3 7^3
  for (int cols = 1; cols < 3000; cols += 7) {
    const int padded = padded_filter_width(cols);
    ASSERT_GE(padded, 2 * cols);
    ASSERT_TRUE(is_7_smooth(padded)) << cols;
    int smooth = 2 * cols;
    while (!is_7_smooth(smooth))
      ++smooth;
    if (padded != smooth) {
      // Only the next power of two may stand in for the smooth size, at most 1.25x as long.
      ASSERT_TRUE(is_power_of_two(padded)) << cols;
      ASSERT_LT(padded / 2, 2 * cols) << cols;
      ASSERT_LE(padded * 4, smooth * 5) << cols;
    }
  }
  EXPECT_EQ(next_smooth_size(4106), 4116);
  EXPECT_EQ(next_smooth_size(3600), 3600);
  EXPECT_EQ(next_power_of_two(3600), 4096);
  EXPECT_EQ(next_power_of_two(4096), 4096);
  EXPECT_EQ(next_power_of_two(1), 1);
  EXPECT_THROW(padded_filter_width(0), std::invalid_argument);
  EXPECT_THROW(padded_filter_width(-3), std::invalid_argument);
}

double analytic_window(FilterWindow window, double w, double d) {
  switch (window) {
    case FilterWindow::kRamLak:
      return 1;
    case FilterWindow::kSheppLogan:
      return w == 0 ? 1 : std::sin(w / (2 * d)) / (w / (2 * d));
    case FilterWindow::kCosine:
      return std::cos(w / (2 * d));
    case FilterWindow::kHamming:
      return 0.54 + 0.46 * std::cos(w / d);
    case FilterWindow::kHann:
      return 0.5 + 0.5 * std::cos(w / d);
  }
  return 0;
}

// Gains times P approximate |f| in cycles per pixel (k / P) times the window; the transformed
// spatial kernel differs from the sampled |f| by O(1/P), most visibly at DC, where it is
// positive (the sampled |f| would be 0 and lose the mean of the filtered projection).
TEST(FilterConfig, ResponseIsTheRampTimesTheWindow) {
  const int p = 1200;
  for (FilterWindow window : {FilterWindow::kRamLak, FilterWindow::kSheppLogan,
                              FilterWindow::kCosine, FilterWindow::kHamming, FilterWindow::kHann}) {
    for (float cutoff : {1.0f, 0.6f}) {
      SCOPED_TRACE(std::string(to_string(window)) + " cutoff " + std::to_string(cutoff));
      const std::vector<float> gains = ramp_filter_response(p, {window, cutoff});
      ASSERT_EQ(gains.size(), static_cast<std::size_t>(p / 2 + 1));
      EXPECT_GT(gains[0], 0.0f);
      // H(0) = (2 / pi^2) sum_{odd n >= P/2} 1 / n^2, about 2 / (pi^2 P).
      EXPECT_NEAR(gains[0] * p, 2.0 / (kPi * kPi * p), 0.05 * 2.0 / (kPi * kPi * p));
      for (int k = 1; k <= p / 2; ++k) {
        const double w = 2 * kPi * k / p;
        const double expected =
            2 * k > cutoff * p ? 0.0
                               : static_cast<double>(k) / p * analytic_window(window, w, cutoff);
        ASSERT_NEAR(gains[static_cast<std::size_t>(k)] * p, expected, 2.0 / p) << k;
      }
    }
  }
  EXPECT_THROW(ramp_filter_response(1, {}), std::invalid_argument);
  EXPECT_EQ(ramp_filter_response(189, {}).size(), 95u);  // odd widths: (P - 1) / 2 + 1 bins
  EXPECT_THROW(ramp_filter_response(1200, {FilterWindow::kHann, 0.0f}), std::invalid_argument);
  EXPECT_THROW(ramp_filter_response(1200, {FilterWindow::kHann, NAN}), std::invalid_argument);
}

double ram_lak(int n) {
  if (n == 0) return 0.25;
  if (n % 2 == 0) return 0;
  return -1.0 / (kPi * kPi * n * n);
}

std::vector<float> filter_all_rows(std::vector<float> values, DetectorShape shape,
                                   const FilterConfig& config) {
  cpu::RampFilter filter(shape, config, 1);
  filter.filter_rows(values.data(), 0, shape.rows, 0);
  return values;
}

// With padding >= 2 cols, the circular convolution equals the linear convolution with the full
// Kak & Slaney kernel: y[m] = sum_k x[k] h(m - k), computed here directly in float64.
TEST(RampFilterCpu, RamLakEqualsDirectConvolutionWithTheSpatialKernel) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  for (int cols : {1, 2, 7, 100, 333}) {
    const DetectorShape shape{3, cols};
    const std::vector<float> x = random.floats(shape.pixels(), -1, 2);
    const std::vector<float> y = filter_all_rows(x, shape, {});
    std::vector<double> ref(shape.pixels());
    for (int r = 0; r < shape.rows; ++r) {
      for (int m = 0; m < cols; ++m) {
        double sum = 0;
        for (int k = 0; k < cols; ++k)
          sum += x[static_cast<std::size_t>(r * cols + k)] * ram_lak(m - k);
        ref[static_cast<std::size_t>(r * cols + m)] = sum;
      }
    }
    EXPECT_LT(test::relative_error(y, ref), 2e-6) << cols;
  }
}

// Unit-density disc of radius R pixels: p(t) = 2 sqrt(R^2 - t^2); its ramp-filtered projection
// is q(t) = 1/pi inside (|t| < R) and (1 - |t| / sqrt(t^2 - R^2)) / pi outside (derived with the
// Hilbert transform, docs/geometry.md), independent of R.
TEST(RampFilterCpu, DiscProjectionFiltersToTheAnalyticResult) {
  const int cols = 512;
  const double radius = 120;
  const double center = 255.5 + 0.3;
  const DetectorShape shape{1, cols};
  std::vector<float> p(cols);
  // Pixel averages (32 sub-samples) of the chord length.
  for (int c = 0; c < cols; ++c) {
    double sum = 0;
    for (int s = 0; s < 32; ++s) {
      const double t = c - center + (s + 0.5) / 32 - 0.5;
      sum += std::abs(t) < radius ? 2 * std::sqrt(radius * radius - t * t) : 0.0;
    }
    p[static_cast<std::size_t>(c)] = static_cast<float>(sum / 32);
  }
  const std::vector<float> q = filter_all_rows(p, shape, {});
  double worst_inside = 0, worst_outside = 0;
  for (int c = 0; c < cols; ++c) {
    const double t = std::abs(c - center);
    // Pixel sampling blurs the square-root edges at t = R; away from them the match is close.
    if (t < 0.75 * radius) {
      worst_inside = std::max(worst_inside, std::abs(q[static_cast<std::size_t>(c)] - 1 / kPi));
    } else if (t > 1.25 * radius && t < 2 * radius) {
      const double expected = (1 - t / std::sqrt(t * t - radius * radius)) / kPi;
      worst_outside = std::max(worst_outside, std::abs(q[static_cast<std::size_t>(c)] - expected));
    }
  }
  // Relative to the interior value 1/pi (measured: 9e-4 and 1e-3).
  EXPECT_LT(worst_inside * kPi, 1.5e-3);
  EXPECT_LT(worst_outside * kPi, 2e-3);
}

TEST(RampFilterCpu, IsLinearAndFiltersRowsIndependently) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{5, 91};
  const FilterConfig config{FilterWindow::kHamming, 0.8f};
  const std::vector<float> a = random.floats(shape.pixels(), -1, 1);
  const std::vector<float> b = random.floats(shape.pixels(), -1, 1);
  std::vector<float> mix(shape.pixels());
  for (std::size_t i = 0; i < mix.size(); ++i)
    mix[i] = 2.5f * a[i] - 0.5f * b[i];
  const auto fa = filter_all_rows(a, shape, config);
  const auto fb = filter_all_rows(b, shape, config);
  const auto fmix = filter_all_rows(mix, shape, config);
  std::vector<double> expected(shape.pixels());
  for (std::size_t i = 0; i < mix.size(); ++i)
    expected[i] = 2.5 * fa[i] - 0.5 * fb[i];
  EXPECT_LT(test::relative_error(fmix, expected), 1e-6);
  // Row 2 alone gives the same values as row 2 of the whole projection.
  std::vector<float> one_row(a);
  cpu::RampFilter filter(shape, config, 1);
  filter.filter_rows(one_row.data(), 2, 3, 0);
  for (int c = 0; c < shape.cols; ++c) {
    EXPECT_EQ(one_row[static_cast<std::size_t>(2 * 91 + c)],
              fa[static_cast<std::size_t>(2 * 91 + c)]);
    EXPECT_EQ(one_row[static_cast<std::size_t>(c)], a[static_cast<std::size_t>(c)]);  // untouched
  }
}

TEST(RampFilterCpu, WorkersFilterConcurrentlyWithTheSameResult) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{64, 200};
  const std::vector<float> input = random.floats(shape.pixels(), 0, 3);
  const auto serial = filter_all_rows(input, shape, {FilterWindow::kSheppLogan, 1.0f});
  cpu::RampFilter filter(shape, {FilterWindow::kSheppLogan, 1.0f}, 4);
  EXPECT_EQ(filter.padded_width(), 400);
  EXPECT_EQ(filter.shape(), shape);
  std::vector<float> parallel = input;
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] { filter.filter_rows(parallel.data(), 16 * w, 16 * (w + 1), w); });
  }
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(parallel, serial);
  // Building filters concurrently is safe too (FFTW's planner is serialised).
  std::vector<std::thread> builders;
  for (int i = 0; i < 3; ++i) {
    builders.emplace_back([i] { cpu::RampFilter f({4, 50 + 13 * i}, {}, 1); });
  }
  for (std::thread& t : builders)
    t.join();
}

TEST(RampFilterCpu, RejectsBadArguments) {
  EXPECT_THROW(cpu::RampFilter({0, 10}, {}, 1), std::invalid_argument);
  EXPECT_THROW(cpu::RampFilter({4, 10}, {}, 0), std::invalid_argument);
  EXPECT_THROW(cpu::RampFilter({4, 10}, {FilterWindow::kHann, -1.0f}, 1), std::invalid_argument);
  cpu::RampFilter filter({4, 10}, {}, 2);
  std::vector<float> data(40, 1.0f);
  EXPECT_THROW(filter.filter_rows(data.data(), 0, 4, 2), std::invalid_argument);
  EXPECT_THROW(filter.filter_rows(data.data(), 0, 5, 0), std::invalid_argument);
  EXPECT_THROW(filter.filter_rows(data.data(), -1, 2, 0), std::invalid_argument);
}

}  // namespace
}  // namespace slicestream
