// RECAST3D's slices in slicestream's world: the viewer speaks of its box normalised to
// [-1, 1]^3, slicestream of millimetres in the scan's box (docs/geometry.md).
#pragma once

#include <utility>

#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "server/tomop/tomop_packets.hpp"

namespace slicestream::tomop {

// Pixels of a slice whose longer side gets `longest_side` pixels; square pixels (the shorter side
// in proportion, at least 1).
std::pair<int, int> slice_pixels(const SliceOrientation& world, int longest_side);

// True for a slice in a z = const plane (the one "refine axial slice" refines).
bool is_axial(const Float9& normalized);

// The box the viewer draws: the scan's box scaled so that its longest half-extent is 1 (the
// viewer's camera is set up for [-1, 1]^3), centred, so that it shows the box's true proportions.
std::pair<Float3, Float3> display_box(const VolumeBox& box);

// Nine finite numbers with valid axes (validate_orientation); empty when usable.
std::string check_normalized(const Float9& normalized);

}  // namespace slicestream::tomop
