#include "clients/common/slice_metadata.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace slicestream::client {

namespace {

// What every slicestream image holds, whatever its kind.
constexpr const char* kUnits =
    R"("units": "1/mm", "quantity": "linear attenuation coefficient", )"
    R"("row_order": "first row = top of the slice (base + y_axis side); x_axis runs left to right")";

double length(const v1::SliceOrientation& o, int first) {
  return std::hypot(o.values(first), o.values(first + 1), o.values(first + 2));
}

std::string triple(const v1::SliceOrientation& o, int first) {
  return fmt::format("[{:g}, {:g}, {:g}]", o.values(first), o.values(first + 1),
                     o.values(first + 2));
}

}  // namespace

std::string filter_name(v1::FilterWindow window) {
  std::string name = v1::FilterWindow_Name(window);
  const std::string prefix = "FILTER_WINDOW_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
    return c == '_' ? '-' : static_cast<char>(std::tolower(c));
  });
  return name;
}

ImageMetadata slice_metadata(const v1::SliceHeader& header, const std::string& kind,
                             const v1::RefinedSliceHeader* refined) {
  ImageMetadata metadata;
  std::string orientation = "null";
  if (header.orientation().values_size() == 9 && header.width() > 0 && header.height() > 0) {
    const v1::SliceOrientation& o = header.orientation();
    metadata.pixel_width_mm = length(o, 0) / header.width();
    metadata.pixel_height_mm = length(o, 3) / header.height();
    orientation = fmt::format(R"({{"x_axis": {}, "y_axis": {}, "base": {}}})", triple(o, 0),
                              triple(o, 3), triple(o, 6));
  }
  std::string text = fmt::format(
      R"({{"kind": "{}", "slice_id": {}, "scan_id": {}, "projections_integrated": {}, )"
      R"("sequence": {}, "width": {}, "height": {}, "pixel_size_mm": [{:.7g}, {:.7g}], )"
      R"("orientation_mm": {}, "filter": "{}", "filter_cutoff": {:g}, {})",
      kind, header.slice_id(), header.scan_id(), header.projections_integrated(), header.sequence(),
      header.width(), header.height(), metadata.pixel_width_mm, metadata.pixel_height_mm,
      orientation, filter_name(header.filter()), header.filter_cutoff(), kUnits);
  if (refined != nullptr) {
    text +=
        fmt::format(R"(, "iterations": {}, "residual_before": {:.6g}, "residual_after": {:.6g})",
                    refined->iterations(), refined->residual_before(), refined->residual_after());
  }
  metadata.description = text + "}";
  return metadata;
}

ImageMetadata preview_plane_metadata(const v1::PreviewHeader& header, const Plane& plane) {
  const v1::VolumeBox& box = header.volume();
  const double voxel[3] = {
      header.size_x() > 0 ? (box.max_mm().x() - box.min_mm().x()) / header.size_x() : 0,
      header.size_y() > 0 ? (box.max_mm().y() - box.min_mm().y()) / header.size_y() : 0,
      header.size_z() > 0 ? (box.max_mm().z() - box.min_mm().z()) / header.size_z() : 0};
  // The plane's horizontal and vertical axes (volume_planes.hpp): xy, xz, yz.
  const int across = plane.name == "yz" ? 1 : 0;
  const int up = plane.name == "xy" ? 1 : 2;
  ImageMetadata metadata;
  metadata.pixel_width_mm = voxel[across];
  metadata.pixel_height_mm = voxel[up];
  metadata.description = fmt::format(
      R"({{"kind": "preview", "plane": "{}", "through": "the volume's centre", "scan_id": {}, )"
      R"("projections_integrated": {}, "sequence": {}, "width": {}, "height": {}, )"
      R"("pixel_size_mm": [{:.7g}, {:.7g}], "box_mm": {{"min": [{:g}, {:g}, {:g}], )"
      R"("max": [{:g}, {:g}, {:g}]}}, {}}})",
      plane.name, header.scan_id(), header.projections_integrated(), header.sequence(), plane.width,
      plane.height, metadata.pixel_width_mm, metadata.pixel_height_mm, box.min_mm().x(),
      box.min_mm().y(), box.min_mm().z(), box.max_mm().x(), box.max_mm().y(), box.max_mm().z(),
      kUnits);
  return metadata;
}

}  // namespace slicestream::client
