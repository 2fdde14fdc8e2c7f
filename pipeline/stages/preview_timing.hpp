// When the reconstruct stage rebuilds the preview volume and how much of its thread the rebuild
// may take. A rebuild is due when the store changed since the last one began and
// preview_interval_s passed (or at once when forced, at scan end). It runs in small units; while
// frames are queued, a unit that took T is followed by (1 - share) / share x T for frames, so the
// preview takes at most `kShareUnderLoad` of the thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace slicestream {

class PreviewTiming {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr double kShareUnderLoad = 0.25;

  // A new scan: nothing built, nothing changed.
  void reset();
  void store_changed() { ++store_version_; }
  // The next rebuild is due as soon as the store has changed (the scan ended).
  void force() { forced_ = true; }

  bool rebuild_due(Clock::time_point now, double interval_s) const;
  // When the next rebuild is due; Clock::time_point::max() while the store is unchanged.
  Clock::time_point rebuild_deadline(double interval_s) const;
  void rebuild_started(Clock::time_point now);

  // Whether a unit of the rebuild may run now.
  bool unit_allowed(Clock::time_point now, bool input_waiting) const {
    return !input_waiting || now >= next_unit_;
  }
  void unit_ran(Clock::time_point begin, Clock::time_point end);

 private:
  std::uint64_t store_version_ = 0;  // counts store changes
  std::uint64_t built_version_ = 0;  // the store version the last rebuild started from
  Clock::time_point started_{};
  Clock::time_point next_unit_{};
  bool forced_ = false;
};

}  // namespace slicestream
