#include "clients/detector/moving_inclusion.hpp"

#include <algorithm>
#include <cmath>

namespace slicestream::detector {

phantom::Ellipsoid moving_inclusion(const VolumeBox& box, double outer_attenuation_per_mm,
                                    double scan_fraction) {
  constexpr double kTwoPi = 6.283185307179586;
  const double f = std::clamp(scan_fraction, 0.0, 1.0);
  const Vec3 half = 0.5 * box.extent();
  const Vec3 center = box.center();
  // Inside the Shepp-Logan head (outer shell 0.62 x 0.83 x 0.73 of the box's half-extents) at
  // every moment: the inclusion stays within 0.45 of them horizontally and 0.55 vertically.
  const double radius_mm = 0.1 * std::min({half.x, half.y, half.z});
  phantom::Ellipsoid inclusion;
  inclusion.center_mm = {center.x + 0.35 * half.x * std::cos(kTwoPi * f),
                         center.y + 0.35 * half.y * std::sin(kTwoPi * f),
                         center.z + (-0.4 + 0.8 * f) * half.z};
  inclusion.semi_axes_mm = {radius_mm, radius_mm, 1.5 * radius_mm};
  inclusion.attenuation_per_mm = 1.5 * outer_attenuation_per_mm * (1.0 - f);
  return inclusion;
}

}  // namespace slicestream::detector
