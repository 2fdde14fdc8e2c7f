// Geometries that validate_geometry accepts but that cannot be what the user meant: a cone-beam
// source inside the reconstruction box (the rays would start inside the object, and the box's
// voxels around the source get weights that blow up). Both the server (an event) and the detector
// (before it streams) report them; neither refuses the scan.
#pragma once

#include <string>

#include "kernels/geometry.hpp"

namespace slicestream {

// Empty when nothing is suspicious, else one sentence naming the first offending projection.
std::string geometry_warning(const ScanGeometry& geometry, const VolumeBox& box);

}  // namespace slicestream
