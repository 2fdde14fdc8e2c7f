// Where reconstructed values live: a slice (RECAST3D orientation) or a box-shaped voxel grid.
#pragma once

#include <array>
#include <string>
#include <utility>

#include "kernels/geometry.hpp"
#include "kernels/vec3.hpp"

namespace slicestream {

// RECAST3D's nine numbers in world millimetres: x-axis, y-axis, base point. Pixel (i, j) of a W x H
// slice is centred at base + (i + 1/2)/W * x_axis + (j + 1/2)/H * y_axis; row j = 0 is the bottom.
struct SliceOrientation {
  std::array<float, 9> values{};
  Vec3 x_axis() const { return {values[0], values[1], values[2]}; }
  Vec3 y_axis() const { return {values[3], values[4], values[5]}; }
  Vec3 base() const { return {values[6], values[7], values[8]}; }
  static SliceOrientation from_axes(Vec3 x_axis, Vec3 y_axis, Vec3 base);
};

// The three orthogonal slices through the box centre, in RECAST3D's default order:
// 0: x = centre (y-z plane), 1: y = centre (x-z plane), 2: z = centre (x-y plane, axial).
inline constexpr std::size_t kDefaultSliceCount = 3;
std::array<SliceOrientation, kDefaultSliceCount> default_slices(const VolumeBox& box);

// Maps RECAST3D's normalised [-1, 1]^3 orientation (its wire format) to the world box.
SliceOrientation from_normalized(const SliceOrientation& normalized, const VolumeBox& box);

// Width and height in pixels of a slice whose longer side has `longer_side` pixels and whose
// pixels are square (the shorter side rounded, at least 1).
std::pair<int, int> square_pixel_size(const SliceOrientation& orientation, int longer_side);

// Whether the slice's rectangle and the box share any point (touching counts).
bool slice_meets_box(const SliceOrientation& orientation, const VolumeBox& box);

// "x-axis (96, 0, 0) y-axis (0, 96, 0) base (-48, -48, 0) mm", for messages and logs.
std::string describe(const SliceOrientation& orientation);

// Empty when valid: finite, non-zero and non-parallel axes.
std::string validate_orientation(const SliceOrientation& orientation);

// A regular grid of sample points: point(i, j, k) = base + (i + 1/2)/width * x_axis
//   + (j + 1/2)/height * y_axis + (k + 1/2)/depth * z_axis. Values are stored with i fastest, then
// j, then k. A slice has depth 1 and z_axis 0; the preview volume spans the VolumeBox.
struct GridSpec {
  Float3 base;
  Float3 x_axis;
  Float3 y_axis;
  Float3 z_axis;
  int width = 0;
  int height = 0;
  int depth = 1;
  std::size_t points() const {
    return static_cast<std::size_t>(width) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(depth);
  }
};

GridSpec slice_grid(const SliceOrientation& orientation, int width, int height);
GridSpec volume_grid(const VolumeBox& box, int size_x, int size_y, int size_z);

}  // namespace slicestream
