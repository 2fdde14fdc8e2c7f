// Work statistics of one pipeline stage: items, service times, and rate and busy fraction over a
// sliding window of the last two seconds. Written by the stage's thread, read by metrics().
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "pipeline/metrics/latency_histogram.hpp"
#include "pipeline/messages/metrics_snapshot.hpp"

namespace slicestream {

class StageStats {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StageStats(std::string name);

  // Marks the start and end of one item's service (end counts it). Several items served together
  // (a batch) count `items`, each with an equal share of the service time.
  void begin_item(Clock::time_point now);
  void end_item(Clock::time_point now, std::uint64_t items = 1);
  // Time the current item spent blocked on a full queue downstream: not service time.
  void exclude_wait(Clock::duration wait);

  // Everything but the queue fields, which the pipeline fills in.
  StageMetrics snapshot(Clock::time_point now) const;

 private:
  static constexpr std::int64_t kBucketNs = 250'000'000;
  static constexpr int kBuckets = 8;  // window: 2 s
  struct Bucket {
    std::int64_t index = -1;
    std::uint64_t items = 0;
    std::int64_t busy_ns = 0;
  };

  static std::int64_t ns(Clock::time_point t);
  Bucket& bucket(std::int64_t index);
  void add_busy(std::int64_t begin_ns, std::int64_t end_ns);

  const std::string name_;
  const std::int64_t created_ns_;
  mutable std::mutex mutex_;
  std::array<Bucket, kBuckets> ring_{};
  std::uint64_t items_ = 0;
  LatencyHistogram service_;
  bool in_item_ = false;
  std::int64_t item_begin_ns_ = 0;
};

}  // namespace slicestream
