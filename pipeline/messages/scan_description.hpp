// A scan as the pipeline sees it: the validated content of a ScanBegin message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/geometry.hpp"

namespace slicestream {

// The largest scans the pipeline takes (validate_scan_description); the server's wire limits
// (--max-detector-side, ...) may be lower.
inline constexpr int kMaxDetectorSide = 65536;
inline constexpr int kMaxProjectionsPerRotation = 1 << 20;
inline constexpr int kMaxCalibrationFrames = 1 << 16;

struct ScanDescription {
  std::uint64_t scan_id = 0;
  // One vector per angular position of a rotation: the window's slots. Frames name their slot
  // (Frame.position); frames carrying their own angle use `circular_parallel` / `circular_cone`.
  ScanGeometry geometry;
  std::optional<CircularParallelParams> circular_parallel;
  std::optional<CircularConeParams> circular_cone;
  PixelType pixel_type = PixelType::kUint16;
  int dark_count = 0;
  int flat_count = 0;
  bool already_linear = false;
  VolumeBox volume;
  // Free text from the sender, escaped when it was decoded (server/codec: one line of printable
  // UTF-8, length-limited), so it goes into logs and events as it is.
  std::string description;

  int projections_per_rotation() const { return static_cast<int>(geometry.vectors.size()); }
};

}  // namespace slicestream
