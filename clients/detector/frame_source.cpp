#include "clients/detector/frame_source.hpp"

#include <stdexcept>

namespace slicestream::detector {

const char* to_string(FrameKind kind) {
  switch (kind) {
    case FrameKind::kDark:
      return "dark";
    case FrameKind::kFlat:
      return "flat";
    case FrameKind::kProjection:
      return "projection";
  }
  return "unknown";
}

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

v1::PixelType to_wire(PixelType type) {
  switch (type) {
    case PixelType::kUint16:
      return v1::PIXEL_TYPE_UINT16;
    case PixelType::kUint32:
      return v1::PIXEL_TYPE_UINT32;
    case PixelType::kFloat32:
      return v1::PIXEL_TYPE_FLOAT32;
  }
  return v1::PIXEL_TYPE_UNSPECIFIED;
}

v1::FrameKind to_wire(FrameKind kind) {
  switch (kind) {
    case FrameKind::kDark:
      return v1::FRAME_KIND_DARK;
    case FrameKind::kFlat:
      return v1::FRAME_KIND_FLAT;
    case FrameKind::kProjection:
      return v1::FRAME_KIND_PROJECTION;
  }
  return v1::FRAME_KIND_UNSPECIFIED;
}

}  // namespace slicestream::detector
