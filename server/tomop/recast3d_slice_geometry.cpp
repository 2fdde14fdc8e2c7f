#include "server/tomop/recast3d_slice_geometry.hpp"

#include <algorithm>
#include <cmath>

namespace slicestream::tomop {

std::pair<int, int> slice_pixels(const SliceOrientation& world, int longest_side) {
  const double x = norm(world.x_axis());
  const double y = norm(world.y_axis());
  const auto shorter = [&](double ratio) {
    return std::max(1, static_cast<int>(std::lround(longest_side * ratio)));
  };
  if (x >= y) return {longest_side, shorter(y / x)};
  return {shorter(x / y), longest_side};
}

bool is_axial(const Float9& normalized) {
  return normalized[2] == 0 && normalized[5] == 0;
}

std::pair<Float3, Float3> display_box(const VolumeBox& box) {
  const Vec3 half = 0.5 * box.extent();
  const double longest = std::max({half.x, half.y, half.z});
  const Float3 max = {static_cast<float>(half.x / longest), static_cast<float>(half.y / longest),
                      static_cast<float>(half.z / longest)};
  return {{-max[0], -max[1], -max[2]}, max};
}

std::string check_normalized(const Float9& normalized) {
  SliceOrientation orientation;
  orientation.values = normalized;
  return validate_orientation(orientation);
}

}  // namespace slicestream::tomop
