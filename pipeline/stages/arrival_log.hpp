// Latency bookkeeping of the reconstruct stage: the arrival times of integrated frames until the
// first publication that shows them, which the publish stage turns into frame_to_slice latencies.
// In per-rotation mode a frame is shown only when its rotation completes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace slicestream {

class ArrivalLog {
 public:
  // Frames kept waiting for a publication at most (the rest are not measured).
  static constexpr std::size_t kMaxPending = std::size_t{1} << 16;

  // A frame was integrated; `shown` when the live slices show it now (sliding window), else when
  // its rotation is shown.
  void integrated(std::uint64_t arrival_ns, bool shown);
  // The frames of the rotation are shown now (a completed rotation, or a rebuild from the store).
  void rotation_shown();
  // The shown frames, for the publication that goes out now; they are forgotten here.
  std::vector<std::uint64_t> take_shown();
  void clear();

 private:
  std::vector<std::uint64_t> shown_;     // integrated, in no publication yet
  std::vector<std::uint64_t> rotation_;  // per rotation: waiting for its completion
};

}  // namespace slicestream
