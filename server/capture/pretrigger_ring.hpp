// The pre-trigger buffer of capture: the frames of the current scan received before a capture
// starts, bounded by pixel bytes. Darks and flats are kept for the whole scan (a capture without
// them cannot be flat-field corrected); projections are kept newest first, the oldest evicted.
// The frames share their payload with the transport, so keeping one costs no copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "pipeline/messages/data_message.hpp"

namespace slicestream {

class PretriggerRing {
 public:
  explicit PretriggerRing(std::size_t budget_bytes) : budget_bytes_(budget_bytes) {}

  // Keeps the frame, evicting the oldest projections to make room. A frame that cannot fit (only
  // darks and flats left, or larger than the budget) is not kept: counted in refused().
  void push(const RawFrame& frame);
  // Darks and flats, then the projections, oldest first; the buffer keeps the darks and flats
  // (a later capture of the same scan needs them too) and forgets the projections.
  std::vector<RawFrame> take();
  void clear();  // a new scan

  std::size_t bytes() const { return bytes_; }
  std::uint64_t evicted() const { return evicted_; }
  std::uint64_t refused() const { return refused_; }

 private:
  std::size_t budget_bytes_;
  std::size_t bytes_ = 0;
  std::vector<RawFrame> calibration_;
  std::deque<RawFrame> projections_;
  std::uint64_t evicted_ = 0;
  std::uint64_t refused_ = 0;
};

}  // namespace slicestream
