// A scan as the pipeline sees it: the validated content of a ScanBegin message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/geometry.hpp"

namespace slicestream {

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
  std::string description;

  int projections_per_rotation() const { return static_cast<int>(geometry.vectors.size()); }
};

}  // namespace slicestream
