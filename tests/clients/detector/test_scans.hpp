// Small simulated scans for the streamer tests.
#pragma once

#include "clients/detector/phantom_scan_source.hpp"

namespace slicestream::detector::testing {

// Parallel beam over 180 degrees: `slots` projections per rotation on a `detector`; the caller
// sets frames, calibration and threads.
inline SimulationConfig parallel_scan(DetectorShape detector, int slots) {
  constexpr double kPi = 3.14159265358979323846;
  SimulationConfig c;
  c.geometry.beam = BeamKind::kParallel;
  c.geometry.detector = detector;
  for (int k = 0; k < slots; ++k)
    c.geometry.slot_angles_rad.push_back(kPi * k / slots);
  return c;
}

}  // namespace slicestream::detector::testing
