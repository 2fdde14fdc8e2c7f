// Slices and grids: RECAST3D's default slices and normalised orientations, slice and volume grids,
// orientation validation.
#include "kernels/grid_spec.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace slicestream {
namespace {

const VolumeBox kBox{{-10, -20, -30}, {30, 40, 50}};  // centre (10, 10, 10), extent (40, 60, 80)

void expect_vec(Vec3 actual, Vec3 expected) {
  EXPECT_NEAR(actual.x, expected.x, 1e-5);
  EXPECT_NEAR(actual.y, expected.y, 1e-5);
  EXPECT_NEAR(actual.z, expected.z, 1e-5);
}

// Pixel (i, j) of a W x H slice: base + (i + 1/2)/W x_axis + (j + 1/2)/H y_axis.
Vec3 pixel_center(const GridSpec& g, int i, int j, int k = 0) {
  return to_vec3(g.base) + ((i + 0.5) / g.width) * to_vec3(g.x_axis) +
         ((j + 0.5) / g.height) * to_vec3(g.y_axis) + ((k + 0.5) / g.depth) * to_vec3(g.z_axis);
}

TEST(GridSpec, DefaultSlicesCrossTheBoxCentreInRecast3dOrder) {
  const auto slices = default_slices(kBox);
  // 0: x = centre, spanning y and z; 1: y = centre, spanning x and z; 2: z = centre (axial).
  expect_vec(slices[0].x_axis(), {0, 60, 0});
  expect_vec(slices[0].y_axis(), {0, 0, 80});
  expect_vec(slices[0].base(), {10, -20, -30});
  expect_vec(slices[1].x_axis(), {40, 0, 0});
  expect_vec(slices[1].y_axis(), {0, 0, 80});
  expect_vec(slices[1].base(), {-10, 10, -30});
  expect_vec(slices[2].x_axis(), {40, 0, 0});
  expect_vec(slices[2].y_axis(), {0, 60, 0});
  expect_vec(slices[2].base(), {-10, -20, 10});
  // The centre of an even slice lies between its four middle pixels, at the box centre.
  const GridSpec axial = slice_grid(slices[2], 4, 6);
  const Vec3 a = pixel_center(axial, 1, 2), b = pixel_center(axial, 2, 3);
  expect_vec(0.5 * (a + b), kBox.center());
  // Row 0 is the bottom (lowest y_axis coordinate), column 0 the left.
  EXPECT_LT(pixel_center(axial, 0, 0).y, pixel_center(axial, 0, 5).y);
  EXPECT_LT(pixel_center(axial, 0, 0).x, pixel_center(axial, 3, 0).x);
  for (const SliceOrientation& s : slices)
    EXPECT_EQ(validate_orientation(s), "");
}

TEST(GridSpec, NormalisedOrientationsMapOntoTheBox) {
  // RECAST3D's wire format: the box is [-1, 1]^3.
  const SliceOrientation normalized =
      SliceOrientation::from_axes({1, 0, 0}, {0, 0.5, 0.5}, {-0.5, 0, 1});
  const SliceOrientation world = from_normalized(normalized, kBox);
  expect_vec(world.x_axis(), {20, 0, 0});  // half-extent (20, 30, 40) times the axis
  expect_vec(world.y_axis(), {0, 15, 20});
  expect_vec(world.base(), {0, 10, 50});  // centre + half-extent * base
}

TEST(GridSpec, SquarePixelSizes) {
  const auto slices = default_slices(kBox);  // extents 60 x 80, 40 x 80, 40 x 60 mm
  EXPECT_EQ(square_pixel_size(slices[0], 400), std::make_pair(300, 400));
  EXPECT_EQ(square_pixel_size(slices[1], 400), std::make_pair(200, 400));
  EXPECT_EQ(square_pixel_size(slices[2], 400), std::make_pair(267, 400));
  const SliceOrientation sliver = SliceOrientation::from_axes({100, 0, 0}, {0, 0.01, 0}, {});
  EXPECT_EQ(square_pixel_size(sliver, 64), std::make_pair(64, 1)) << "at least one pixel";
}

TEST(GridSpec, SliceMeetsBox) {
  for (const SliceOrientation& s : default_slices(kBox))
    EXPECT_TRUE(slice_meets_box(s, kBox));
  // Beside the box, above it, and tilted past its corner: apart.
  EXPECT_FALSE(
      slice_meets_box(SliceOrientation::from_axes({5, 0, 0}, {0, 5, 0}, {31, 0, 0}), kBox));
  EXPECT_FALSE(
      slice_meets_box(SliceOrientation::from_axes({40, 0, 0}, {0, 60, 0}, {-10, -20, 51}), kBox));
  EXPECT_FALSE(
      slice_meets_box(SliceOrientation::from_axes({10, 10, 0}, {0, 0, 10}, {31, 40, 0}), kBox));
  // Crossing the box although no corner is inside; touching a face.
  EXPECT_TRUE(slice_meets_box(
      SliceOrientation::from_axes({200, 0, 0}, {0, 200, 0}, {-100, -100, 0}), kBox));
  EXPECT_TRUE(slice_meets_box(SliceOrientation::from_axes({5, 0, 0}, {0, 5, 0}, {0, 0, 50}), kBox));
  // A vertical slice passing the box's edge at x = 30, y = 40 diagonally, 1 mm beyond it: its
  // extent overlaps the box's along x, y and z; only its normal separates them.
  EXPECT_FALSE(
      slice_meets_box(SliceOrientation::from_axes({21, -21, 0}, {0, 0, 10}, {20, 51, 0}), kBox));
  EXPECT_TRUE(
      slice_meets_box(SliceOrientation::from_axes({21, -21, 0}, {0, 0, 10}, {19, 50, 0}), kBox));
}

TEST(GridSpec, SliceAndVolumeGrids) {
  const GridSpec slice = slice_grid(default_slices(kBox)[0], 30, 20);
  EXPECT_EQ(slice.width, 30);
  EXPECT_EQ(slice.height, 20);
  EXPECT_EQ(slice.depth, 1);
  EXPECT_EQ(slice.points(), 600u);
  expect_vec(to_vec3(slice.z_axis), {0, 0, 0});
  const GridSpec volume = volume_grid(kBox, 4, 6, 8);
  EXPECT_EQ(volume.points(), 192u);
  // Voxel (i, j, k) is centred at min + (i + 1/2, j + 1/2, k + 1/2) * voxel size (10 mm here).
  expect_vec(pixel_center(volume, 0, 0, 0), {-5, -15, -25});
  expect_vec(pixel_center(volume, 3, 5, 7), {25, 35, 45});
}

TEST(GridSpec, ValidationRejectsDegenerateOrientations) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(validate_orientation(SliceOrientation::from_axes({nan, 0, 0}, {0, 1, 0}, {0, 0, 0})),
            "");
  EXPECT_NE(validate_orientation(SliceOrientation::from_axes(
                {1, 0, 0}, {0, 1, 0}, {0, 0, std::numeric_limits<double>::infinity()})),
            "");
  EXPECT_NE(validate_orientation(SliceOrientation::from_axes({0, 0, 0}, {0, 1, 0}, {0, 0, 0})), "");
  EXPECT_NE(validate_orientation(SliceOrientation::from_axes({1, 2, 3}, {2, 4, 6}, {0, 0, 0})), "");
  EXPECT_EQ(validate_orientation(SliceOrientation::from_axes({1, 2, 3}, {2, 4, 5}, {0, 0, 0})), "");
}

}  // namespace
}  // namespace slicestream
