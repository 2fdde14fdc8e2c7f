#include "server/capture/pretrigger_ring.hpp"

namespace slicestream {

void PretriggerRing::push(const RawFrame& frame) {
  const bool calibration = frame.kind != FrameKind::kProjection;
  while (bytes_ + frame.payload_bytes > budget_bytes_ && !projections_.empty()) {
    bytes_ -= projections_.front().payload_bytes;
    projections_.pop_front();
    ++evicted_;
  }
  if (bytes_ + frame.payload_bytes > budget_bytes_) {
    ++refused_;
    return;
  }
  bytes_ += frame.payload_bytes;
  if (calibration) {
    calibration_.push_back(frame);
  } else {
    projections_.push_back(frame);
  }
}

std::vector<RawFrame> PretriggerRing::take() {
  std::vector<RawFrame> frames = calibration_;
  for (RawFrame& frame : projections_) {
    bytes_ -= frame.payload_bytes;
    frames.push_back(std::move(frame));
  }
  projections_.clear();
  return frames;
}

void PretriggerRing::clear() {
  calibration_.clear();
  projections_.clear();
  bytes_ = 0;
}

}  // namespace slicestream
