#include "clients/common/image_file.hpp"

#include <png.h>
#include <tiffio.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace slicestream::client {

namespace {

std::string lower_extension(const std::string& path) {
  const std::size_t dot = path.find_last_of('.');
  const std::size_t slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return {};
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

void check_size(const std::string& path, int width, int height, const std::vector<float>& values) {
  if (width <= 0 || height <= 0 ||
      values.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height)) {
    throw ClientError("cannot write " + path + ": " + std::to_string(values.size()) +
                      " values for a " + std::to_string(width) + " x " + std::to_string(height) +
                      " image");
  }
}

void commit(const std::string& temporary, const std::string& path) {
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw ClientError("cannot rename " + temporary + " to " + path + ": " + std::strerror(errno));
  }
}

// Silences libtiff's default stderr handlers; failures are reported by return codes instead.
void quiet_tiff_handler(const char*, const char*, va_list) {}

constexpr double kMmPerCm = 10;

void set_metadata_tags(TIFF* tiff, const ImageMetadata& metadata) {
  TIFFSetField(tiff, TIFFTAG_SOFTWARE, "slicestream");
  if (metadata.pixel_width_mm > 0 && metadata.pixel_height_mm > 0) {
    TIFFSetField(tiff, TIFFTAG_RESOLUTIONUNIT, RESUNIT_CENTIMETER);
    TIFFSetField(tiff, TIFFTAG_XRESOLUTION, static_cast<float>(kMmPerCm / metadata.pixel_width_mm));
    TIFFSetField(tiff, TIFFTAG_YRESOLUTION,
                 static_cast<float>(kMmPerCm / metadata.pixel_height_mm));
  }
  if (!metadata.description.empty()) {
    TIFFSetField(tiff, TIFFTAG_IMAGEDESCRIPTION, metadata.description.c_str());
  }
}

}  // namespace

ImageFormat image_format_for(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == ".tif" || ext == ".tiff") return ImageFormat::kTiffFloat32;
  if (ext == ".png") return ImageFormat::kPng8;
  throw ClientError("cannot tell the image format of '" + path +
                    "': use .tiff (float32, values kept) or .png (8-bit, auto-contrast)");
}

ContrastWindow auto_contrast(const std::vector<float>& values, double low_percent,
                             double high_percent) {
  std::vector<float> finite;
  finite.reserve(values.size());
  for (float v : values) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  if (finite.empty()) return {};
  auto percentile = [&](double percent) {
    const double position = percent / 100.0 * static_cast<double>(finite.size() - 1);
    const auto index = static_cast<std::size_t>(std::lround(position));
    std::nth_element(finite.begin(), finite.begin() + static_cast<std::ptrdiff_t>(index),
                     finite.end());
    return finite[index];
  };
  return {percentile(low_percent), percentile(high_percent)};
}

void write_image(const std::string& path, int width, int height, const std::vector<float>& values,
                 const ImageMetadata& metadata) {
  if (image_format_for(path) == ImageFormat::kTiffFloat32) {
    write_tiff_float32(path, width, height, values, metadata);
  } else {
    write_png_8bit(path, width, height, values, auto_contrast(values));
  }
}

void write_tiff_float32(const std::string& path, int width, int height,
                        const std::vector<float>& values, const ImageMetadata& metadata) {
  check_size(path, width, height, values);
  TIFFSetErrorHandler(quiet_tiff_handler);
  TIFFSetWarningHandler(quiet_tiff_handler);
  const std::string temporary = path + ".tmp";
  TIFF* tiff = TIFFOpen(temporary.c_str(), "w");
  if (!tiff) throw ClientError("cannot create " + temporary + ": " + std::strerror(errno));
  TIFFSetField(tiff, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(width));
  TIFFSetField(tiff, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(height));
  TIFFSetField(tiff, TIFFTAG_SAMPLESPERPIXEL, 1);
  TIFFSetField(tiff, TIFFTAG_BITSPERSAMPLE, 32);
  TIFFSetField(tiff, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP);
  TIFFSetField(tiff, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
  TIFFSetField(tiff, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(tiff, TIFFTAG_COMPRESSION, COMPRESSION_NONE);
  TIFFSetField(tiff, TIFFTAG_ORIENTATION, ORIENTATION_TOPLEFT);
  TIFFSetField(tiff, TIFFTAG_ROWSPERSTRIP, TIFFDefaultStripSize(tiff, 0));
  set_metadata_tags(tiff, metadata);
  bool ok = true;
  std::vector<float> row(static_cast<std::size_t>(width));
  for (int r = 0; r < height && ok; ++r) {
    const float* source = values.data() + static_cast<std::size_t>(height - 1 - r) * row.size();
    std::copy(source, source + row.size(), row.begin());
    ok = TIFFWriteScanline(tiff, row.data(), static_cast<std::uint32_t>(r), 0) == 1;
  }
  TIFFClose(tiff);
  if (!ok) {
    std::remove(temporary.c_str());
    throw ClientError("cannot write " + temporary + " (disk full?)");
  }
  commit(temporary, path);
}

void write_png_8bit(const std::string& path, int width, int height,
                    const std::vector<float>& values, ContrastWindow window) {
  check_size(path, width, height, values);
  const float span = window.high - window.low;
  std::vector<std::uint8_t> pixels(values.size());
  for (int r = 0; r < height; ++r) {
    const std::size_t source_row = static_cast<std::size_t>(height - 1 - r);
    for (int c = 0; c < width; ++c) {
      const float v =
          values[source_row * static_cast<std::size_t>(width) + static_cast<std::size_t>(c)];
      float grey = 0;
      if (std::isfinite(v)) grey = span > 0 ? (v - window.low) / span * 255.0f : 128.0f;
      pixels[static_cast<std::size_t>(r) * static_cast<std::size_t>(width) +
             static_cast<std::size_t>(c)] =
          static_cast<std::uint8_t>(std::lround(std::clamp(grey, 0.0f, 255.0f)));
    }
  }
  // libpng's simplified API: no setjmp/longjmp through C++ frames.
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_GRAY;
  const std::string temporary = path + ".tmp";
  if (png_image_write_to_file(&image, temporary.c_str(), 0, pixels.data(), width, nullptr) == 0) {
    const std::string reason = image.message;
    png_image_free(&image);
    std::remove(temporary.c_str());
    throw ClientError("cannot write " + temporary + ": " + reason);
  }
  commit(temporary, path);
}

}  // namespace slicestream::client
