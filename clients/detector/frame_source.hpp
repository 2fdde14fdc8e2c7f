// What slicestream-detector streams: a ScanBegin, then darks, flats and projections in that order.
// The simulator and the replayers are FrameSources; the ScanStreamer sends any of them. Frame
// kinds and pixel types are the kernels' (kernels/frame_view.hpp), converted for the wire by
// wire/kernel_enums.hpp like the server's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "clients/detector/pixel_buffer.hpp"
#include "kernels/frame_view.hpp"
#include "slicestream.pb.h"
#include "wire/kernel_enums.hpp"

namespace slicestream::detector {

// Where a projection goes in the server's window: its slot (index of the angle / vector of one
// rotation) or an explicit angle (circular geometries; the server keeps the last N frames).
enum class Placement { kPosition, kAngle };

// Frame number i of a stream (0-based over darks, flats, projections) -> its kind and its running
// number within that kind.
struct FrameSequence {
  std::uint64_t darks = 0;
  std::uint64_t flats = 0;
  std::uint64_t projections = 0;

  std::uint64_t total() const { return darks + flats + projections; }
  FrameKind kind_of(std::uint64_t frame) const;
  std::uint64_t index_within_kind(std::uint64_t frame) const;
};

struct OutgoingFrame {
  FrameKind kind = FrameKind::kProjection;
  std::uint32_t index = 0;          // running number within its kind
  std::uint32_t position = 0;       // projections with Placement::kPosition: slot of the rotation
  std::optional<double> angle_rad;  // projections with Placement::kAngle
  // Shared so that a cached frame is sent again without copying it here.
  std::shared_ptr<const PixelBuffer> pixels;
};

class FrameSource {
 public:
  virtual ~FrameSource() = default;
  // Everything but scan_id, which the streamer sets.
  virtual const v1::ScanBegin& scan_begin() const = 0;
  virtual FrameSequence sequence() const = 0;
  // Frame `frame` of the sequence. Safe to call concurrently for different frames when
  // max_parallel_renders() > 1.
  virtual OutgoingFrame render(std::uint64_t frame) = 0;
  virtual int max_parallel_renders() const = 0;
};

}  // namespace slicestream::detector
