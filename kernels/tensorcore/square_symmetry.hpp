// The 8-fold symmetry of a square pixel grid (paper §3.4, Figs. 4-5): the dihedral group of the
// square (4 rotations by 90 degrees and 4 reflections) acting on the image plane.
//
// If the scan geometry is invariant under these maps (angles uniform over 180 or 360 degrees with
// a count divisible by 4, zero detector offset, centred detector), then with O the canonical
// octant {0 <= y <= x} and w(q) = 1 / (number of symmetries fixing pixel q):
//   A x = sum_g T_g A_oct G_g x,     A^T y = sum_g G_g^T A_oct^T T_g^T y
// where A_oct is A restricted to the columns of O scaled by w (the paper's "masking"),
// (G_g x)[q] = x[g q] gathers the transformed image onto the octant and (T_g z)[r] = z[g^-1 r]
// moves projections back (the inverse transform of the paper). One image becomes 8 right-hand
// sides of a matrix 8 times smaller.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensorcore/geometry_2d.hpp"

namespace slicestream::tensorcore {

// x' = xx * x + xy * y, y' = yx * x + yy * y.
struct SquareSymmetry {
  int xx, xy, yx, yy;
};

inline constexpr int kSymmetryCount = 8;
inline constexpr std::array<SquareSymmetry, kSymmetryCount> kSquareSymmetries = {{
    {1, 0, 0, 1},    // identity
    {0, -1, 1, 0},   // rotation by 90 degrees
    {-1, 0, 0, -1},  // rotation by 180 degrees
    {0, 1, -1, 0},   // rotation by 270 degrees
    {-1, 0, 0, 1},   // mirror x
    {1, 0, 0, -1},   // mirror y
    {0, 1, 1, 0},    // transpose
    {0, -1, -1, 0},  // anti-transpose
}};
// Index of the inverse of each symmetry.
inline constexpr std::array<int, kSymmetryCount> kInverseSymmetry = {0, 3, 2, 1, 4, 5, 6, 7};

inline Vec2 apply(const SquareSymmetry& g, Vec2 p) {
  return {g.xx * p.x + g.xy * p.y, g.yx * p.x + g.yy * p.y};
}

// Everything the symmetric operator needs, for one geometry and square grid.
struct SymmetryPlan {
  int width = 0;  // == height
  long long rays = 0;
  std::vector<float> column_factor;         // per pixel: w(q) inside the octant, 0 outside
  std::vector<std::int32_t> octant_pixels;  // the pixels q of O (image indices), ascending
  // pixel_image[g][i]: image index of g(octant_pixels[i]).
  std::array<std::vector<std::int32_t>, kSymmetryCount> pixel_image;
  // ray_image[g][r]: index of the ray g(r).
  std::array<std::vector<std::int32_t>, kSymmetryCount> ray_image;
};

// Empty when the geometry and grid have the 8-fold symmetry, else why not (non-square grid,
// detector offset, angle set not invariant under some transform, ...).
std::string check_symmetry(const Geometry2d& geometry, const ImageGrid2d& grid);
// Throws std::invalid_argument with check_symmetry's message when the symmetry does not hold.
SymmetryPlan make_symmetry_plan(const Geometry2d& geometry, const ImageGrid2d& grid);

}  // namespace slicestream::tensorcore
