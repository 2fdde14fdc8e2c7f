// The guard counts of preprocessed frames that the preprocess stage has not taken yet
// (Backend::take_preprocess_counts), one entry per frame, in order. Bounded: a caller that never
// takes them (a benchmark, a test) cannot make it grow without limit; past kMaxEntries a frame's
// counts are added to the last entry.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/preprocess_params.hpp"

namespace slicestream {

class PendingCounts {
 public:
  static constexpr std::size_t kMaxEntries = 4096;

  void add(const PreprocessCounters& counts) {
    if (entries_.size() < kMaxEntries) {
      entries_.push_back(counts);
      return;
    }
    entries_.back().clamped_low += counts.clamped_low;
    entries_.back().non_finite += counts.non_finite;
  }
  void add(const std::vector<PreprocessCounters>& counts) {
    for (const PreprocessCounters& c : counts)
      add(c);
  }
  std::vector<PreprocessCounters> take() {
    std::vector<PreprocessCounters> taken;
    taken.swap(entries_);
    return taken;
  }

 private:
  std::vector<PreprocessCounters> entries_;
};

}  // namespace slicestream
