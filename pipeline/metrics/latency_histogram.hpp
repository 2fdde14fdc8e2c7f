// A fixed-bucket histogram of durations (log-spaced, 8 buckets per octave: about 9 % resolution)
// for service-time and latency percentiles without keeping samples.
#pragma once

#include <array>
#include <cstdint>

#include "pipeline/messages/metrics_snapshot.hpp"

namespace slicestream {

class LatencyHistogram {
 public:
  void add(double value_us);
  LatencySummary summary() const;
  void clear() { *this = LatencyHistogram(); }

 private:
  static constexpr int kBucketsPerOctave = 8;
  static constexpr int kOctaves = 40;  // 1 us .. 2^40 us (12 days)
  // Bucket 0 holds values below 1 us; bucket b >= 1 holds [2^((b-1)/8), 2^(b/8)) us.
  static constexpr int kBuckets = 1 + kBucketsPerOctave * kOctaves;

  static int bucket_of(double value_us);
  double percentile(double fraction) const;

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  double max_us_ = 0;
  double sum_us_ = 0;
};

}  // namespace slicestream
