// When the reconstruct stage rebuilds the preview volume. A rebuild is due when the store changed
// since the last one began and preview_interval_s passed (or at once when forced, at scan end).
// It runs in small units, within the stage's ThreadShare (thread_share.hpp).
#pragma once

#include <chrono>
#include <cstdint>

namespace slicestream {

class PreviewTiming {
 public:
  using Clock = std::chrono::steady_clock;

  // A new scan: nothing built, nothing changed.
  void reset();
  void store_changed() { ++store_version_; }
  // The next rebuild is due as soon as the store has changed (the scan ended).
  void force() { forced_ = true; }

  bool rebuild_due(Clock::time_point now, double interval_s) const;
  // When the next rebuild is due; Clock::time_point::max() while the store is unchanged.
  Clock::time_point rebuild_deadline(double interval_s) const;
  void rebuild_started(Clock::time_point now);

 private:
  std::uint64_t store_version_ = 0;  // counts store changes
  std::uint64_t built_version_ = 0;  // the store version the last rebuild started from
  Clock::time_point started_{};
  bool forced_ = false;
};

}  // namespace slicestream
