// The three dynamic-CT setups of the ASTRA KernelKit paper's Table 1 (docs: shared/papers/
// astra-kernelkit-quasi3d.md §4.2): detector size, projections per 180 degrees, frame rate.
#pragma once

#include <string>
#include <vector>

#include "kernels/geometry.hpp"

namespace slicestream::detector {

struct DetectorPreset {
  std::string name;
  std::string description;
  BeamKind beam = BeamKind::kParallel;
  DetectorShape detector;  // rows x cols
  int projections_per_180_deg = 0;
  double frame_rate_hz = 0;
  double pixel_size_mm = 0;
  double source_origin_mm = 0;    // cone presets
  double origin_detector_mm = 0;  // cone presets
};

const std::vector<DetectorPreset>& detector_presets();
// Throws std::invalid_argument naming the known presets.
const DetectorPreset& find_preset(const std::string& name);

}  // namespace slicestream::detector
