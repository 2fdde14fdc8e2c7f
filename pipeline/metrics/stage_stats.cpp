#include "pipeline/metrics/stage_stats.hpp"

#include <algorithm>

namespace slicestream {

StageStats::StageStats(std::string name) : name_(std::move(name)), created_ns_(ns(Clock::now())) {}

std::int64_t StageStats::ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

StageStats::Bucket& StageStats::bucket(std::int64_t index) {
  Bucket& b = ring_[static_cast<std::size_t>(index % kBuckets)];
  if (b.index != index) b = Bucket{index, 0, 0};
  return b;
}

void StageStats::add_busy(std::int64_t begin_ns, std::int64_t end_ns) {
  const std::int64_t last = end_ns / kBucketNs;
  const std::int64_t first = std::max(begin_ns / kBucketNs, last - (kBuckets - 1));
  for (std::int64_t i = first; i <= last; ++i) {
    const std::int64_t lo = std::max(begin_ns, i * kBucketNs);
    const std::int64_t hi = std::min(end_ns, (i + 1) * kBucketNs);
    if (hi > lo) bucket(i).busy_ns += hi - lo;
  }
}

void StageStats::begin_item(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_item_ = true;
  item_begin_ns_ = ns(now);
}

void StageStats::end_item(Clock::time_point now, std::uint64_t items) {
  if (items == 0) items = 1;
  const std::int64_t end_ns = ns(now);
  std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t begin_ns = in_item_ ? item_begin_ns_ : end_ns;
  in_item_ = false;
  add_busy(begin_ns, end_ns);
  bucket(end_ns / kBucketNs).items += items;
  items_ += items;
  const double share_us =
      static_cast<double>(end_ns - begin_ns) / 1000.0 / static_cast<double>(items);
  for (std::uint64_t i = 0; i < items; ++i)
    service_.add(share_us);
}

void StageStats::exclude_wait(Clock::duration wait) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (in_item_)
    item_begin_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
}

StageMetrics StageStats::snapshot(Clock::time_point now) const {
  const std::int64_t now_ns = ns(now);
  std::lock_guard<std::mutex> lock(mutex_);
  StageMetrics m;
  m.name = name_;
  m.items = items_;
  m.service_us = service_.summary();
  const std::int64_t current = now_ns / kBucketNs;
  const std::int64_t oldest = current - (kBuckets - 1);
  const std::int64_t window_begin = std::max(oldest * kBucketNs, created_ns_);
  const std::int64_t span = now_ns - window_begin;
  if (span <= 0) return m;
  std::uint64_t items = 0;
  std::int64_t busy = 0;
  for (const Bucket& b : ring_) {
    if (b.index >= oldest && b.index <= current) {
      items += b.items;
      busy += b.busy_ns;
    }
  }
  if (in_item_) busy += now_ns - std::max(item_begin_ns_, window_begin);
  const double span_s = static_cast<double>(span) * 1e-9;
  m.rate_per_s = static_cast<double>(items) / span_s;
  m.busy_fraction = std::min(1.0, static_cast<double>(busy) / static_cast<double>(span));
  return m;
}

}  // namespace slicestream
