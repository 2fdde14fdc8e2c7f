// Which slices can be refined, and how: an axial slice (axes in the xy-plane, orthogonal, square
// pixels, anywhere in the plane and at any in-plane rotation) of a parallel-beam scan whose rays
// lie in z = const planes with horizontal detector rows, or the central slice of a circular
// cone-beam scan (in the plane of the source trajectory, horizontal detector rows). Each detector
// row of such a parallel-beam scan is an independent 2D problem, and the row at the source's
// height of a cone-beam scan is a fan-beam one; a slice between two rows fits their linear
// interpolation, as the backprojector interpolates between them.
//
// The 2D problem is posed in the slice's own frame (origin at the slice centre, axes along the
// slice's x- and y-axis), so that the slice's pixels are exactly the ImageGrid2d of
// kernels/tensorcore/geometry_2d.hpp (centred, row 0 at the bottom, column fastest): an
// off-centre or rotated slice becomes a centred grid seen by shifted and rotated projections.
#pragma once

#include <optional>
#include <string>

#include "kernels/geometry.hpp"
#include "pipeline/backend/refinement_setup.hpp"
#include "pipeline/messages/command.hpp"

namespace slicestream {

// Why a slice cannot be refined: the reply's code, machine-readable reason and message.
struct RefinementProblem {
  StatusCode code = StatusCode::kInvalidArgument;
  std::string reason;
  std::string message;
};

// An axial slice as a centred 2D grid.
struct AxialSliceFrame {
  tensorcore::Vec2 center;  // world x, y of the slice centre (mm)
  tensorcore::Vec2 x_axis;  // unit vectors of the slice's x- and y-axis in world x, y
  tensorcore::Vec2 y_axis;
  double z_mm = 0;  // the slice's height
  tensorcore::ImageGrid2d grid;
};

// How the sinogram rows of a slice are taken from the detector.
struct RefinementPlan {
  AxialSliceFrame frame;
  // Continuous row of the slice height (cone beam: of the source's), pixel centres at integers.
  double detector_row = 0;
  int row_low = 0;  // b = (1 - weight_high) row_low + weight_high row_high
  int row_high = 0;
  float weight_high = 0;
};

// Orientation checks alone (no scan needed): reasons "not_axial", "non_square_pixels".
std::optional<RefinementProblem> axial_slice_frame(const SetSliceCommand& slice,
                                                   AxialSliceFrame* frame);

// With the scan geometry (the rotation-axis offset applied): reasons "not_central_slice" (cone
// beam: the slice is not in the source plane, or the source moves vertically),
// "rays_not_in_slice_plane", "slice_height_varies", "slice_outside_detector" (all
// FAILED_PRECONDITION) besides those of axial_slice_frame.
std::optional<RefinementProblem> plan_refinement(const SetSliceCommand& slice,
                                                 const ScanGeometry& geometry,
                                                 RefinementPlan* plan);

// The 2D problem of the slice for the window's projections (`window`: one vector per slot as
// stored, rotation-axis offset applied): parallel beam, or fan beam for a cone-beam scan (the
// source positions, detector centres and column steps of the source plane, in the slice's frame).
// Throws std::invalid_argument when they do not fit the plan (they were planned from the same scan,
// so only a broken geometry does).
RefinementSetup refinement_setup(const RefinementPlan& plan, const ScanGeometry& window);

}  // namespace slicestream
