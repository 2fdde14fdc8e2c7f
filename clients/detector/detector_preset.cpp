#include "clients/detector/detector_preset.hpp"

#include <stdexcept>

namespace slicestream::detector {

const std::vector<DetectorPreset>& detector_presets() {
  // FleX-ray (CWI lab micro-CT): cone beam. SOD 190 mm and ODD 150 mm are a typical lab set-up;
  // 0.3 mm pixels (a 74.8 um flat panel binned 4x4) make the default field of view, and so the
  // phantom scaled into it, fill most of the 600 x 400 detector.
  // High-speed [31] and TOMCAT/Tomobank [35, 32]: synchrotron parallel beam with the detectors'
  // typical effective pixel sizes.
  static const std::vector<DetectorPreset> presets = {
      {"flexray",
       "FleX-ray lab micro-CT, cone beam, 400x600, 75 projections/180 deg, 83 Hz",
       BeamKind::kCone,
       {400, 600},
       75,
       83.0,
       0.3,
       190.0,
       150.0},
      {"highspeed",
       "high-speed synchrotron, parallel beam, 1024x1024, 128/180 deg, 12.8 kHz",
       BeamKind::kParallel,
       {1024, 1024},
       128,
       12800.0,
       0.011,
       0,
       0},
      {"tomobank",
       "SLS TOMCAT (Tomobank foam), parallel beam, 2016x1800, 300/180 deg, 1.3 kHz",
       BeamKind::kParallel,
       {2016, 1800},
       300,
       1300.0,
       0.00275,
       0,
       0},
  };
  return presets;
}

const DetectorPreset& find_preset(const std::string& name) {
  std::string known;
  for (const DetectorPreset& preset : detector_presets()) {
    if (preset.name == name) return preset;
    known += (known.empty() ? "" : ", ") + preset.name;
  }
  throw std::invalid_argument("unknown preset '" + name + "' (known: " + known + ")");
}

}  // namespace slicestream::detector
