#include "kernels/geometry_warnings.hpp"

#include <sstream>

namespace slicestream {

namespace {

bool inside(const Vec3& point, const VolumeBox& box) {
  return point.x >= box.min_mm.x && point.x <= box.max_mm.x && point.y >= box.min_mm.y &&
         point.y <= box.max_mm.y && point.z >= box.min_mm.z && point.z <= box.max_mm.z;
}

}  // namespace

std::string geometry_warning(const ScanGeometry& geometry, const VolumeBox& box) {
  if (geometry.beam != BeamKind::kCone) return {};
  std::size_t count = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < geometry.vectors.size(); ++i) {
    if (!inside(geometry.vectors[i].source_or_ray, box)) continue;
    if (count++ == 0) first = i;
  }
  if (count == 0) return {};
  const Vec3 source = geometry.vectors[first].source_or_ray;
  std::ostringstream text;
  text << "the source lies inside the reconstruction box " << describe_box(box) << " for " << count
       << " of " << geometry.vectors.size() << " projections (projection " << first
       << ": source at (" << source.x << ", " << source.y << ", " << source.z
       << ") mm): rays would start inside the object. Check the source-object distance (it must "
          "exceed the object's radius) and the box";
  return text.str();
}

}  // namespace slicestream
