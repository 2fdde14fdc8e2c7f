// Writing slices as image files, chosen by extension:
//   .tif / .tiff  float32 TIFF, values kept exactly (attenuation per mm);
//   .png          8-bit grey, auto-contrast between the 0.5 and 99.5 percentiles.
// Slice values have row 0 at the bottom (RECAST3D); files store the top row first, so images
// are written upright. Files are written to "<path>.tmp" and renamed, so a viewer polling the
// file never reads a half-written image.
#pragma once

#include <string>
#include <vector>

#include "clients/common/client_error.hpp"

namespace slicestream::client {

enum class ImageFormat { kTiffFloat32, kPng8 };

// Throws ClientError for an extension other than .tif, .tiff, .png (any case).
ImageFormat image_format_for(const std::string& path);

struct ContrastWindow {
  float low = 0;
  float high = 1;
};
// Percentiles of the finite values (0 .. 100); {0, 1} when none are finite.
ContrastWindow auto_contrast(const std::vector<float>& values, double low_percent = 0.5,
                             double high_percent = 99.5);

// What a float TIFF says about its pixels besides their values: the pixel size as the standard
// resolution tags (pixels per centimetre) and the rest as JSON in ImageDescription
// (slice_metadata.hpp fills it from a slice's header). PNGs carry none of it.
struct ImageMetadata {
  double pixel_width_mm = 0;  // 0: unknown, no resolution tags
  double pixel_height_mm = 0;
  std::string description;  // ImageDescription; empty: none
};

// width * height values, x fastest, row 0 at the bottom. Throws ClientError on failure.
void write_image(const std::string& path, int width, int height, const std::vector<float>& values,
                 const ImageMetadata& metadata = {});
void write_tiff_float32(const std::string& path, int width, int height,
                        const std::vector<float>& values, const ImageMetadata& metadata = {});
void write_png_8bit(const std::string& path, int width, int height,
                    const std::vector<float>& values, ContrastWindow window);

}  // namespace slicestream::client
