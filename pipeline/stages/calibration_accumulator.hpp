// Averages a scan's dark and flat frames per pixel in double precision. Non-finite samples (float
// detectors) are left out of their pixel's average and counted.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/frame_view.hpp"
#include "pipeline/messages/data_message.hpp"

namespace slicestream {

class CalibrationAccumulator {
 public:
  void reset(DetectorShape shape, int dark_count, int flat_count);

  // One dark or flat, already validated (shape, type, payload size, index < declared count).
  // Returns how many of its samples were non-finite and left out.
  std::uint64_t add(FrameKind kind, std::uint32_t index, const FrameView& frame);

  // Every declared dark and flat index has arrived at least once.
  bool complete() const;
  int distinct_received(FrameKind kind) const;
  int declared(FrameKind kind) const;

  struct Averages {
    std::vector<float> dark;  // empty when no dark arrived
    std::vector<float> flat;  // empty when no flat arrived
    // Pixels without a single finite sample: marked dead (flat = dark) so they reconstruct as 0.
    std::uint64_t dead_pixels = 0;
  };
  Averages average() const;

 private:
  struct Sum {
    int declared = 0;
    int distinct = 0;
    int frames = 0;
    std::vector<bool> seen;  // per declared index
    std::vector<double> sum;
    std::vector<std::uint32_t> samples;
  };
  Sum& sum_of(FrameKind kind) { return kind == FrameKind::kDark ? dark_ : flat_; }
  const Sum& sum_of(FrameKind kind) const { return kind == FrameKind::kDark ? dark_ : flat_; }

  DetectorShape shape_;
  Sum dark_;
  Sum flat_;
};

}  // namespace slicestream
