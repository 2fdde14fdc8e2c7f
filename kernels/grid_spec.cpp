#include "kernels/grid_spec.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace slicestream {

SliceOrientation SliceOrientation::from_axes(Vec3 x_axis, Vec3 y_axis, Vec3 base) {
  SliceOrientation o;
  const Vec3 parts[3] = {x_axis, y_axis, base};
  for (int i = 0; i < 3; ++i) {
    o.values[3 * i + 0] = static_cast<float>(parts[i].x);
    o.values[3 * i + 1] = static_cast<float>(parts[i].y);
    o.values[3 * i + 2] = static_cast<float>(parts[i].z);
  }
  return o;
}

SliceOrientation from_normalized(const SliceOrientation& normalized, const VolumeBox& box) {
  const Vec3 c = box.center();
  const Vec3 h = 0.5 * box.extent();
  auto scale = [&](Vec3 a) { return Vec3{a.x * h.x, a.y * h.y, a.z * h.z}; };
  return SliceOrientation::from_axes(scale(normalized.x_axis()), scale(normalized.y_axis()),
                                     c + scale(normalized.base()));
}

std::array<SliceOrientation, kDefaultSliceCount> default_slices(const VolumeBox& box) {
  // RECAST3D's defaults in normalised coordinates, mapped onto the box.
  const std::array<SliceOrientation, 3> normalized = {
      SliceOrientation::from_axes({0, 2, 0}, {0, 0, 2}, {0, -1, -1}),
      SliceOrientation::from_axes({2, 0, 0}, {0, 0, 2}, {-1, 0, -1}),
      SliceOrientation::from_axes({2, 0, 0}, {0, 2, 0}, {-1, -1, 0}),
  };
  return {from_normalized(normalized[0], box), from_normalized(normalized[1], box),
          from_normalized(normalized[2], box)};
}

std::pair<int, int> square_pixel_size(const SliceOrientation& orientation, int longer_side) {
  const double width_mm = norm(orientation.x_axis());
  const double height_mm = norm(orientation.y_axis());
  const auto shorter = [longer_side](double short_mm, double long_mm) {
    return std::max(1, static_cast<int>(std::lround(longer_side * short_mm / long_mm)));
  };
  if (width_mm >= height_mm) return {longer_side, shorter(height_mm, width_mm)};
  return {shorter(width_mm, height_mm), longer_side};
}

bool slice_meets_box(const SliceOrientation& orientation, const VolumeBox& box) {
  // Separating axes of a parallelogram and a box: the box's three axes, the slice's normal, and
  // the cross products of the slice's two edges with the box's axes. They meet unless the
  // projections onto one of these axes are apart.
  const Vec3 x = orientation.x_axis();
  const Vec3 y = orientation.y_axis();
  const Vec3 corners[4] = {orientation.base(), orientation.base() + x, orientation.base() + y,
                           orientation.base() + x + y};
  const Vec3 center = box.center();
  const Vec3 half = 0.5 * box.extent();
  const Vec3 box_axes[3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  std::vector<Vec3> axes(box_axes, box_axes + 3);
  axes.push_back(cross(x, y));
  for (const Vec3& e : box_axes) {
    axes.push_back(cross(e, x));
    axes.push_back(cross(e, y));
  }
  const double scale = std::max({norm(x), norm(y), norm(box.extent())});
  for (const Vec3& axis : axes) {
    if (norm(axis) <= 1e-12 * scale) continue;  // an edge parallel to a box axis
    double low = dot(corners[0], axis);
    double high = low;
    for (const Vec3& corner : corners) {
      low = std::min(low, dot(corner, axis));
      high = std::max(high, dot(corner, axis));
    }
    const double reach =
        half.x * std::abs(axis.x) + half.y * std::abs(axis.y) + half.z * std::abs(axis.z);
    const double middle = dot(center, axis);
    const double tolerance = 1e-9 * scale * norm(axis);
    if (high < middle - reach - tolerance || low > middle + reach + tolerance) return false;
  }
  return true;
}

std::string describe(const SliceOrientation& orientation) {
  const auto triple = [](const Vec3& v) {
    std::ostringstream text;
    text << "(" << v.x << ", " << v.y << ", " << v.z << ")";
    return text.str();
  };
  return "x-axis " + triple(orientation.x_axis()) + " y-axis " + triple(orientation.y_axis()) +
         " base " + triple(orientation.base()) + " mm";
}

std::string validate_orientation(const SliceOrientation& orientation) {
  for (float value : orientation.values) {
    if (!std::isfinite(value)) return "orientation contains a non-finite number";
  }
  const Vec3 x = orientation.x_axis();
  const Vec3 y = orientation.y_axis();
  const double x_len = norm(x);
  const double y_len = norm(y);
  if (x_len <= 0 || y_len <= 0) return "orientation has a zero-length axis";
  if (norm(cross(x, y)) <= 1e-6 * x_len * y_len) return "orientation axes are parallel";
  return {};
}

GridSpec slice_grid(const SliceOrientation& o, int width, int height) {
  GridSpec g;
  g.base = to_float3(o.base());
  g.x_axis = to_float3(o.x_axis());
  g.y_axis = to_float3(o.y_axis());
  g.z_axis = {0, 0, 0};
  g.width = width;
  g.height = height;
  g.depth = 1;
  return g;
}

GridSpec volume_grid(const VolumeBox& box, int size_x, int size_y, int size_z) {
  const Vec3 e = box.extent();
  GridSpec g;
  g.base = to_float3(box.min_mm);
  g.x_axis = to_float3({e.x, 0, 0});
  g.y_axis = to_float3({0, e.y, 0});
  g.z_axis = to_float3({0, 0, e.z});
  g.width = size_x;
  g.height = size_y;
  g.depth = size_z;
  return g;
}

}  // namespace slicestream
