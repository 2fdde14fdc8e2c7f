#include "pipeline/refinement/refinement_plan.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "kernels/tensorcore/geometry_2d.hpp"

namespace slicestream {
namespace {

// Orientations travel as float32: relative tolerances well above its 6e-8 rounding.
constexpr double kAxisTolerance = 1e-4;
// Detector rows of the slice height that differ by less than this between slots are one row.
constexpr double kRowTolerance = 1e-3;
// A cone-beam slice is in the source plane when their heights differ by less than this fraction
// of a detector row (orientations travel as float32).
constexpr double kPlaneTolerance = 1e-3;

RefinementProblem problem(StatusCode code, const char* reason, std::string message) {
  return {code, reason, std::move(message)};
}

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Continuous detector row of height z (horizontal u): z = d.z + (row - rows/2 + 1/2) v.z. For
// parallel beam the horizontal rays of height z meet it; for a cone beam with its source at
// height z, the fan in the source plane.
double row_at_height(const ProjectionVector& v, int rows, double z_mm) {
  return (z_mm - v.detector_center.z) / v.v.z + rows / 2.0 - 0.5;
}

}  // namespace

std::optional<RefinementProblem> axial_slice_frame(const SetSliceCommand& slice,
                                                   AxialSliceFrame* frame) {
  const Vec3 x = slice.orientation.x_axis();
  const Vec3 y = slice.orientation.y_axis();
  const double x_len = norm(x);
  const double y_len = norm(y);
  if (!(x_len > 0) || !(y_len > 0) || slice.width < 1 || slice.height < 1) {
    return problem(StatusCode::kInvalidArgument, "not_axial", "the slice has no valid axes");
  }
  if (std::abs(x.z) > kAxisTolerance * x_len || std::abs(y.z) > kAxisTolerance * y_len ||
      std::abs(dot(x, y)) > kAxisTolerance * x_len * y_len) {
    return problem(StatusCode::kInvalidArgument, "not_axial",
                   "slice " + std::to_string(slice.slice_id) +
                       " is not axial: refinement needs orthogonal x- and y-axes in the xy-plane "
                       "(a slice at one height of a parallel-beam scan, or the central slice of a "
                       "cone-beam one)");
  }
  const double pixel_x = x_len / slice.width;
  const double pixel_y = y_len / slice.height;
  if (std::abs(pixel_x - pixel_y) > kAxisTolerance * pixel_x) {
    return problem(StatusCode::kInvalidArgument, "non_square_pixels",
                   "slice " + std::to_string(slice.slice_id) + " has " + number(pixel_x) + " x " +
                       number(pixel_y) +
                       " mm pixels: refinement needs square pixels (axis lengths proportional "
                       "to width and height)");
  }
  const Vec3 base = slice.orientation.base();
  const Vec3 center = base + 0.5 * x + 0.5 * y;
  frame->center = {center.x, center.y};
  frame->x_axis = {x.x / x_len, x.y / x_len};
  frame->y_axis = {y.x / y_len, y.y / y_len};
  frame->z_mm = center.z;
  frame->grid = {slice.width, slice.height, pixel_x};
  return std::nullopt;
}

std::optional<RefinementProblem> plan_refinement(const SetSliceCommand& slice,
                                                 const ScanGeometry& geometry,
                                                 RefinementPlan* plan) {
  if (auto p = axial_slice_frame(slice, &plan->frame)) return p;
  const bool fan = geometry.beam == BeamKind::kCone;
  if (!fan) {
    try {
      (void)tensorcore::slice_geometry_2d(geometry, 0);  // horizontal rows, rays in z planes
    } catch (const std::invalid_argument& e) {
      return problem(StatusCode::kFailedPrecondition, "rays_not_in_slice_plane", e.what());
    }
  }
  const int rows = geometry.detector.rows;
  const double z = plan->frame.z_mm;
  double row = 0;
  for (std::size_t i = 0; i < geometry.vectors.size(); ++i) {
    const ProjectionVector& v = geometry.vectors[i];
    if (!(std::abs(v.v.z) > 1e-9 * norm(v.v))) {
      return problem(StatusCode::kFailedPrecondition, "rays_not_in_slice_plane",
                     "projection " + std::to_string(i) + ": the detector columns are horizontal");
    }
    if (fan) {
      if (std::abs(v.u.z) > 1e-9 * norm(v.u)) {
        return problem(StatusCode::kFailedPrecondition, "rays_not_in_slice_plane",
                       "projection " + std::to_string(i) +
                           ": the detector rows are not horizontal, so no row is a fan beam");
      }
      // The fan of the source plane: only a slice in that plane sees the rays of one row.
      if (!(std::abs(v.source_or_ray.z - z) <= kPlaneTolerance * std::abs(v.v.z))) {
        return problem(StatusCode::kFailedPrecondition, "not_central_slice",
                       "the slice at z = " + number(z) +
                           " mm is not in the plane of the cone "
                           "beam's source (z = " +
                           number(v.source_or_ray.z) + " mm in projection " + std::to_string(i) +
                           "): only the central slice of a circular cone-beam "
                           "scan is a 2D (fan-beam) problem");
      }
    }
    // Parallel beam: the row of the slice height; fan beam: the row at the source's height (the
    // slice lies in that plane), which keeps the 2D problem exactly in the source plane.
    const double slot_row = row_at_height(v, rows, fan ? v.source_or_ray.z : z);
    if (i == 0) row = slot_row;
    if (!std::isfinite(slot_row) || std::abs(slot_row - row) > kRowTolerance) {
      return problem(StatusCode::kFailedPrecondition, "slice_height_varies",
                     "the slice height z = " + number(z) + " mm falls on detector row " +
                         number(row) + " in projection 0 but " + number(slot_row) +
                         " in projection " + std::to_string(i) +
                         ": the detector moves vertically, so no row is a 2D problem");
    }
  }
  if (!(row >= -kRowTolerance && row <= rows - 1 + kRowTolerance)) {
    return problem(StatusCode::kFailedPrecondition, "slice_outside_detector",
                   "the slice height z = " + number(z) + " mm falls on detector row " +
                       number(row) + ", outside rows 0.." + std::to_string(rows - 1));
  }
  row = std::min(std::max(row, 0.0), static_cast<double>(rows - 1));
  if (fan) {
    try {
      (void)tensorcore::slice_geometry_2d(geometry, row);  // what is left of a fan beam
    } catch (const std::invalid_argument& e) {
      return problem(StatusCode::kFailedPrecondition, "rays_not_in_slice_plane", e.what());
    }
  }
  plan->detector_row = row;
  plan->row_low = std::min(static_cast<int>(std::floor(row)), rows - 1);
  plan->weight_high = static_cast<float>(row - plan->row_low);
  plan->row_high = plan->weight_high > 0 ? plan->row_low + 1 : plan->row_low;
  return std::nullopt;
}

RefinementSetup refinement_setup(const RefinementPlan& plan, const ScanGeometry& window) {
  // Validates the rows (horizontal, rays in their plane or through the source) and gives the 2D
  // vectors of the continuous row: between two rows, where their interpolation measures.
  tensorcore::Geometry2d g = tensorcore::slice_geometry_2d(window, plan.detector_row);
  const AxialSliceFrame& f = plan.frame;
  auto to_frame_direction = [&](tensorcore::Vec2 a) {
    return tensorcore::Vec2{tensorcore::dot(a, f.x_axis), tensorcore::dot(a, f.y_axis)};
  };
  auto to_frame_point = [&](tensorcore::Vec2 p) { return to_frame_direction(p - f.center); };
  const bool fan = g.beam == BeamKind::kCone;
  for (tensorcore::ProjectionVector2d& v : g.vectors) {
    v.source_or_ray = fan ? to_frame_point(v.source_or_ray) : to_frame_direction(v.source_or_ray);
    v.detector_center = to_frame_point(v.detector_center);
    v.u = to_frame_direction(v.u);
  }
  return {std::move(g), f.grid};
}

}  // namespace slicestream
