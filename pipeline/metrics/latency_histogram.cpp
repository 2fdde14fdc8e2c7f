#include "pipeline/metrics/latency_histogram.hpp"

#include <algorithm>
#include <cmath>

namespace slicestream {

int LatencyHistogram::bucket_of(double value_us) {
  if (!(value_us >= 1.0)) return 0;  // also catches NaN
  const int bucket = 1 + static_cast<int>(std::floor(std::log2(value_us) * kBucketsPerOctave));
  return std::min(bucket, kBuckets - 1);
}

void LatencyHistogram::add(double value_us) {
  if (!(value_us >= 0.0)) value_us = 0.0;
  ++counts_[static_cast<std::size_t>(bucket_of(value_us))];
  ++count_;
  max_us_ = std::max(max_us_, value_us);
  sum_us_ += value_us;
}

double LatencyHistogram::percentile(double fraction) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<std::uint64_t>(std::ceil(fraction * static_cast<double>(count_)));
  std::uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[static_cast<std::size_t>(b)];
    if (seen >= std::max<std::uint64_t>(rank, 1)) {
      if (b == 0) return std::min(0.5, max_us_);
      // Geometric centre of the bucket, never above the largest value seen.
      const double centre = std::exp2((static_cast<double>(b) - 0.5) / kBucketsPerOctave);
      return std::min(centre, max_us_);
    }
  }
  return max_us_;
}

LatencySummary LatencyHistogram::summary() const {
  LatencySummary s;
  s.count = count_;
  s.p50_us = percentile(0.50);
  s.p99_us = percentile(0.99);
  s.max_us = max_us_;
  s.sum_us = sum_us_;
  // Values below 2^k us fill buckets 0 .. k * kBucketsPerOctave.
  std::uint64_t below = 0;
  int next_bucket = 0;
  for (int k = 0; k < kLatencyBounds; ++k) {
    for (; next_bucket <= k * kBucketsPerOctave; ++next_bucket)
      below += counts_[static_cast<std::size_t>(next_bucket)];
    s.count_below_us[static_cast<std::size_t>(k)] = below;
  }
  return s;
}

}  // namespace slicestream
