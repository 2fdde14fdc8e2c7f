// A 2D analytic phantom (the modified Shepp-Logan head of Toft, ten ellipses) with exact line
// integrals: ground truth for the distance-driven projector and for CGLS accuracy. (The 3D
// phantom of kernels/phantom is a different object: its z = 0 section is not this one.)
#pragma once

#include <vector>

#include "kernels/executor.hpp"
#include "kernels/tensorcore/geometry_2d.hpp"

namespace slicestream::tensorcore {

struct Ellipse2d {
  Vec2 center_mm;
  double semi_axis_x_mm = 0;
  double semi_axis_y_mm = 0;
  double angle_rad = 0;  // rotation of the x semi-axis from the x axis
  double value = 0;      // added inside (attenuation per mm)
};

// Modified Shepp-Logan scaled so that its outer ellipse has semi-axes 0.69 and 0.92 of
// radius_mm, with outer value `outer_value` and the inner ones scaled alike.
std::vector<Ellipse2d> shepp_logan_2d(double radius_mm, double outer_value = 0.02);

double value_at(const std::vector<Ellipse2d>& phantom, Vec2 point_mm);
// Exact integral along the whole line point + t * direction (chord lengths in mm times values;
// independent of the length of direction).
double line_integral(const std::vector<Ellipse2d>& phantom, Vec2 point_mm, Vec2 direction);

// Pixel averages over supersample^2 points per pixel (row-major, GridSpec orientation).
std::vector<float> sample_phantom(Executor& executor, const std::vector<Ellipse2d>& phantom,
                                  const ImageGrid2d& grid, int supersample = 4);
// Bin-averaged exact line integrals: the mean over `supersample` rays spread evenly across each
// bin (projection-major sinogram), in parallel over projections.
std::vector<float> project_phantom(Executor& executor, const std::vector<Ellipse2d>& phantom,
                                   const Geometry2d& geometry, int supersample = 8);

// The CG accuracy problem of the benchmark (paper Fig. 8): a size x size image of 1 mm pixels,
// parallel beam with `angles` angles over 180 degrees onto `bins` bins as wide as the image, the
// Shepp-Logan phantom of radius size / 2; truth: its pixel averages (4 x 4 samples), data: its
// bin-averaged exact line integrals (4 rays per bin).
struct PhantomProblem2d {
  ImageGrid2d grid;
  Geometry2d geometry;
  std::vector<float> truth;
  std::vector<float> data;
};
PhantomProblem2d make_phantom_problem(Executor& executor, int size, int angles = 720,
                                      int bins = 512);

// ||x - reference|| / ||reference|| (in double): the accuracy measure of CG reconstructions.
double relative_error(const std::vector<float>& x, const std::vector<float>& reference);

// The multi-slice form of the problem (the benchmark's 32 slices at once): `slices` copies of
// `values` (data or truth) as rows x slices, slice s scaled by 1 + 0.01 s so that the slices
// differ (and round differently to fp16).
std::vector<float> scaled_slices(const std::vector<float>& values, int slices);
// relative_error of each slice of `x` (pixels x slices) against scaled_slices of `truth`.
std::vector<double> slice_errors(const std::vector<float>& x, const std::vector<float>& truth,
                                 int slices);
// The slice error furthest from `reference` (the fp32 solver's): the accuracy bar's measure.
double furthest_slice_error(const std::vector<double>& errors, double reference);

}  // namespace slicestream::tensorcore
