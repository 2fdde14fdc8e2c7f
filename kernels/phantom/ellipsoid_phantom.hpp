// Analytic ellipsoid phantoms (3D Shepp-Logan) with exact line integrals: the ground truth for
// the detector simulator and for reconstruction tests.
#pragma once

#include <vector>

#include "kernels/frame_view.hpp"
#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"

namespace slicestream::phantom {

struct Ellipsoid {
  Vec3 center_mm;
  Vec3 semi_axes_mm;
  // Orientation as Euler angles (z-x-z, as in Schabel's phantom3d): the ellipsoid's own axes are
  // the columns of Rz(phi) Rx(theta) Rz(psi).
  double phi_rad = 0;
  double theta_rad = 0;
  double psi_rad = 0;
  double attenuation_per_mm = 0;  // added where this ellipsoid covers the point
};

// The modified (high-contrast) 3D Shepp-Logan phantom scaled to fit in `box` (its unit-cube
// definition stretched to 0.9 of the box's half-extents, centred), with the outer ellipsoid's
// attenuation set to `outer_attenuation_per_mm` and the others scaled alike.
std::vector<Ellipsoid> shepp_logan_3d(const VolumeBox& box, double outer_attenuation_per_mm = 0.02);

double value_at(const std::vector<Ellipsoid>& phantom, Vec3 point_mm);

// Exact integral of the phantom along the whole line point + t * direction (direction need not
// be normalised; the result is per unit length of the line, i.e. chord lengths in mm).
double line_integral(const std::vector<Ellipsoid>& phantom, Vec3 point_mm, Vec3 direction);

// One projection: each pixel's line integral through its centre (cone: source to pixel centre;
// parallel: along the ray), averaged over supersample x supersample points per pixel. Rows
// [row_begin, row_end) of `out` (rows x cols floats); row_end < 0 means all rows.
void project(const std::vector<Ellipsoid>& phantom, BeamKind beam, const ProjectionVector& vector,
             DetectorShape detector, float* out, int supersample = 1, int row_begin = 0,
             int row_end = -1);

// The phantom sampled on a grid (reference images for tests), averaged over supersample^3 points
// per cell (supersample^2 for a slice, which has depth 1).
std::vector<float> sample(const std::vector<Ellipsoid>& phantom, const GridSpec& grid,
                          int supersample = 1);

}  // namespace slicestream::phantom
