// The metadata a saved slice carries (image_file.hpp's ImageMetadata), from the header it was
// published or fetched with: the pixel size from the orientation's axes, and as JSON the slice's
// id, scan, projections, orientation in world mm, row order, units and ramp filter, so that a
// TIFF read back years later still says what it shows.
#pragma once

#include <string>

#include "clients/common/image_file.hpp"
#include "clients/common/volume_planes.hpp"
#include "slicestream.pb.h"

namespace slicestream::client {

// `kind`: "slice" or "refined" (then `refined` gives the iterations and residuals).
ImageMetadata slice_metadata(const v1::SliceHeader& header, const std::string& kind = "slice",
                             const v1::RefinedSliceHeader* refined = nullptr);
// A central plane of a preview volume ("xy", "xz", "yz").
ImageMetadata preview_plane_metadata(const v1::PreviewHeader& header, const Plane& plane);

// "ram-lak" from FILTER_WINDOW_RAM_LAK.
std::string filter_name(v1::FilterWindow window);

}  // namespace slicestream::client
