#include "clients/detector/frame_source.hpp"

#include <stdexcept>

namespace slicestream::detector {

FrameKind FrameSequence::kind_of(std::uint64_t frame) const {
  if (frame >= total()) throw std::out_of_range("frame number beyond the end of the scan");
  if (frame < darks) return FrameKind::kDark;
  if (frame < darks + flats) return FrameKind::kFlat;
  return FrameKind::kProjection;
}

std::uint64_t FrameSequence::index_within_kind(std::uint64_t frame) const {
  switch (kind_of(frame)) {
    case FrameKind::kDark:
      return frame;
    case FrameKind::kFlat:
      return frame - darks;
    case FrameKind::kProjection:
      return frame - darks - flats;
  }
  return 0;
}

}  // namespace slicestream::detector
