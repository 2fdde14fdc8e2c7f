// The detector rows whose preprocessed values the preprocess stage copies out of every projection
// (CapturedRows) for slice refinement. Set by the reconstruct stage whenever the refined slices
// change, read by the preprocess stage for every projection; empty (the common case) costs one
// atomic load.
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

namespace slicestream {

class DetectorRowSelection {
 public:
  // Ascending, without duplicates.
  void set(std::vector<int> rows) {
    std::lock_guard<std::mutex> lock(mutex_);
    rows_ = std::move(rows);
    any_ = !rows_.empty();
  }
  std::vector<int> rows() const {
    if (!any_) return {};
    std::lock_guard<std::mutex> lock(mutex_);
    return rows_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<int> rows_;
  std::atomic<bool> any_{false};
};

}  // namespace slicestream
