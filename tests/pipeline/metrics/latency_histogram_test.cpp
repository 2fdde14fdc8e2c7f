// LatencyHistogram's summary: percentiles within the bucket resolution, the exact sum, and the
// cumulative counts below powers of two that the Prometheus exposition publishes as buckets.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "pipeline/metrics/latency_histogram.hpp"

namespace slicestream {
namespace {

TEST(LatencyHistogram, CountsBelowPowersOfTwoAreExactAndCumulative) {
  std::mt19937 random(12345);
  // Log-uniform over 0.1 us .. 2^30 us: every bound is crossed, some values lie above the last.
  std::uniform_real_distribution<double> log2_value(std::log2(0.1), 30.0);
  LatencyHistogram histogram;
  std::vector<double> values;
  for (int i = 0; i < 5000; ++i) {
    const double value = std::exp2(log2_value(random));
    values.push_back(value);
    histogram.add(value);
  }
  const LatencySummary summary = histogram.summary();
  ASSERT_EQ(summary.count, values.size());
  double sum = 0;
  for (double v : values)
    sum += v;
  EXPECT_NEAR(summary.sum_us, sum, 1e-9 * sum);
  for (int k = 0; k < kLatencyBounds; ++k) {
    std::uint64_t below = 0;
    for (double v : values)
      below += v < std::exp2(k) ? 1 : 0;
    EXPECT_EQ(summary.count_below_us[static_cast<std::size_t>(k)], below) << "bound 2^" << k;
    if (k > 0) {
      EXPECT_GE(summary.count_below_us[static_cast<std::size_t>(k)],
                summary.count_below_us[static_cast<std::size_t>(k - 1)]);
    }
  }
  EXPECT_LT(summary.count_below_us.back(), summary.count);  // some lie above 2^27 us
}

TEST(LatencyHistogram, EmptySummaryIsZero) {
  const LatencySummary summary = LatencyHistogram().summary();
  EXPECT_EQ(summary.count, 0u);
  EXPECT_EQ(summary.sum_us, 0.0);
  for (std::uint64_t below : summary.count_below_us)
    EXPECT_EQ(below, 0u);
}

}  // namespace
}  // namespace slicestream
