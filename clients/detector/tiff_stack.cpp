#include "clients/detector/tiff_stack.hpp"

#include <tiffio.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "clients/detector/file_list.hpp"

namespace slicestream::detector {

namespace {

struct SampleLayout {
  int bits = 0;
  int format = SAMPLEFORMAT_UINT;
  DetectorShape shape;
  bool tiled = false;
};

template <typename T>
double sample_as_double(const unsigned char* data, std::size_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return static_cast<double>(value);
}

double sample_value(const SampleLayout& layout, const unsigned char* data, std::size_t index) {
  const int bits = layout.bits;
  switch (layout.format) {
    case SAMPLEFORMAT_INT:
      if (bits == 8) return sample_as_double<std::int8_t>(data, index);
      if (bits == 16) return sample_as_double<std::int16_t>(data, index);
      return sample_as_double<std::int32_t>(data, index);
    case SAMPLEFORMAT_IEEEFP:
      if (bits == 32) return sample_as_double<float>(data, index);
      return sample_as_double<double>(data, index);
    default:
      if (bits == 8) return sample_as_double<std::uint8_t>(data, index);
      if (bits == 16) return sample_as_double<std::uint16_t>(data, index);
      return sample_as_double<std::uint32_t>(data, index);
  }
}

PixelType wire_type_of(const SampleLayout& layout) {
  if (layout.format == SAMPLEFORMAT_UINT) {
    return layout.bits <= 16 ? PixelType::kUint16 : PixelType::kUint32;
  }
  return PixelType::kFloat32;
}

// Libtiff reports problems through handlers that print to stderr; we throw our own messages.
void silence_libtiff() {
  TIFFSetErrorHandler(nullptr);
  TIFFSetWarningHandler(nullptr);
}

SampleLayout read_layout(TIFF* tiff, const std::string& where) {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint16_t bits = 0;
  std::uint16_t samples = 1;
  std::uint16_t format = SAMPLEFORMAT_UINT;
  if (!TIFFGetField(tiff, TIFFTAG_IMAGEWIDTH, &width) ||
      !TIFFGetField(tiff, TIFFTAG_IMAGELENGTH, &height)) {
    throw std::runtime_error(where + ": no image size");
  }
  TIFFGetFieldDefaulted(tiff, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_SAMPLESPERPIXEL, &samples);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_SAMPLEFORMAT, &format);
  if (samples != 1) {
    throw std::runtime_error(where + ": has " + std::to_string(samples) +
                             " samples per pixel; detector frames must be single-channel");
  }
  const bool integer = format == SAMPLEFORMAT_UINT || format == SAMPLEFORMAT_INT;
  const bool supported = (integer && (bits == 8 || bits == 16 || bits == 32)) ||
                         (format == SAMPLEFORMAT_IEEEFP && (bits == 32 || bits == 64));
  if (!supported) {
    throw std::runtime_error(where + ": unsupported pixel format (" + std::to_string(bits) +
                             "-bit, sample format " + std::to_string(format) +
                             "); use 8/16/32-bit integers or 32/64-bit floats");
  }
  if (width == 0 || height == 0 || width > (1u << 20) || height > (1u << 20)) {
    throw std::runtime_error(where + ": implausible image size " + std::to_string(width) + "x" +
                             std::to_string(height));
  }
  return {
      bits, format, {static_cast<int>(height), static_cast<int>(width)}, TIFFIsTiled(tiff) != 0};
}

std::string page_name(const std::string& file, int page) {
  return page == 0 ? file : file + " page " + std::to_string(page);
}

}  // namespace

struct TiffStack::OpenFile {
  std::size_t file;
  TIFF* tiff;
  ~OpenFile() { TIFFClose(tiff); }
};

TiffStack::TiffStack(const TiffStackPaths& paths) : projections_pattern_(paths.projections) {
  silence_libtiff();
  if (paths.projections.empty()) throw std::runtime_error("no projection images given");
  index_files(FrameKind::kProjection, paths.projections);
  if (!paths.darks.empty()) index_files(FrameKind::kDark, paths.darks);
  if (!paths.flats.empty()) index_files(FrameKind::kFlat, paths.flats);
}

TiffStack::~TiffStack() = default;

TiffStack::OpenFile& TiffStack::open(std::size_t file) {
  if (open_file_ && open_file_->file == file) return *open_file_;
  open_file_.reset();
  TIFF* tiff = TIFFOpen(files_[file].c_str(), "r");
  if (!tiff) throw std::runtime_error(files_[file] + ": cannot open as TIFF");
  open_file_.reset(new OpenFile{file, tiff});
  return *open_file_;
}

void TiffStack::index_files(FrameKind kind, const std::string& pattern) {
  for (const std::string& name : expand_file_pattern(pattern)) {
    files_.push_back(name);
    TIFF* tiff = open(files_.size() - 1).tiff;
    int page = 0;
    do {
      const SampleLayout layout = read_layout(tiff, page_name(name, page));
      const bool first = kind == FrameKind::kProjection && pages_[0].empty() && pages_[1].empty() &&
                         pages_[2].empty();
      if (first) {
        shape_ = layout.shape;
        pixel_type_ = wire_type_of(layout);
      } else if (layout.shape != shape_) {
        throw std::runtime_error(
            page_name(name, page) + " is " + std::to_string(layout.shape.cols) + "x" +
            std::to_string(layout.shape.rows) + " (width x height) but " + projections_pattern_ +
            " starts with " + std::to_string(shape_.cols) + "x" + std::to_string(shape_.rows));
      }
      pages_[static_cast<int>(kind)].push_back({files_.size() - 1, page});
      ++page;
    } while (TIFFReadDirectory(tiff));
  }
}

std::size_t TiffStack::count(FrameKind kind) const {
  return pages_[static_cast<int>(kind)].size();
}

void TiffStack::read(FrameKind kind, std::size_t index, PixelBuffer& out) {
  const std::vector<Page>& pages = pages_[static_cast<int>(kind)];
  if (index >= pages.size()) {
    throw std::out_of_range(std::string("TIFF stack has no ") + to_string(kind) + " frame " +
                            std::to_string(index));
  }
  const Page& page = pages[index];
  const std::string where = page_name(files_[page.file], page.page);
  TIFF* tiff = open(page.file).tiff;
  // Sequential pages step forward; TIFFSetDirectory would walk the chain from the first page
  // every time (quadratic in the number of pages).
  const int current = static_cast<int>(TIFFCurrentDirectory(tiff));
  const bool ok =
      current == page.page ||
      (current + 1 == page.page ? TIFFReadDirectory(tiff)
                                : TIFFSetDirectory(tiff, static_cast<tdir_t>(page.page)));
  if (!ok) throw std::runtime_error(where + ": cannot read the page");
  const SampleLayout layout = read_layout(tiff, where);
  if (out.shape != shape_ || out.type != pixel_type_) out = PixelBuffer(pixel_type_, shape_);
  const std::size_t width = static_cast<std::size_t>(shape_.cols);
  const std::size_t sample_bytes = static_cast<std::size_t>(layout.bits / 8);
  auto convert = [&](const unsigned char* samples, std::size_t first_pixel, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      store_pixel(pixel_type_, out.bytes.data(), first_pixel + i, sample_value(layout, samples, i));
    }
  };
  if (!layout.tiled) {
    std::vector<unsigned char> row(static_cast<std::size_t>(TIFFScanlineSize(tiff)));
    if (row.size() < width * sample_bytes) throw std::runtime_error(where + ": bad scanline size");
    for (int r = 0; r < shape_.rows; ++r) {
      if (TIFFReadScanline(tiff, row.data(), static_cast<std::uint32_t>(r), 0) < 0) {
        throw std::runtime_error(where + ": cannot decode row " + std::to_string(r));
      }
      convert(row.data(), static_cast<std::size_t>(r) * width, width);
    }
    return;
  }
  std::uint32_t tile_width = 0;
  std::uint32_t tile_height = 0;
  TIFFGetField(tiff, TIFFTAG_TILEWIDTH, &tile_width);
  TIFFGetField(tiff, TIFFTAG_TILELENGTH, &tile_height);
  if (tile_width == 0 || tile_height == 0) throw std::runtime_error(where + ": bad tile size");
  std::vector<unsigned char> tile(static_cast<std::size_t>(TIFFTileSize(tiff)));
  for (std::uint32_t y = 0; y < static_cast<std::uint32_t>(shape_.rows); y += tile_height) {
    for (std::uint32_t x = 0; x < static_cast<std::uint32_t>(shape_.cols); x += tile_width) {
      if (TIFFReadTile(tiff, tile.data(), x, y, 0, 0) < 0) {
        throw std::runtime_error(where + ": cannot decode the tile at " + std::to_string(x) + "," +
                                 std::to_string(y));
      }
      const std::uint32_t rows = std::min<std::uint32_t>(tile_height, shape_.rows - y);
      const std::uint32_t cols = std::min<std::uint32_t>(tile_width, shape_.cols - x);
      for (std::uint32_t r = 0; r < rows; ++r) {
        convert(tile.data() + static_cast<std::size_t>(r) * tile_width * sample_bytes,
                (y + r) * width + x, cols);
      }
    }
  }
}

std::string TiffStack::describe() const {
  std::ostringstream text;
  text << projections_pattern_ << ": " << count(FrameKind::kProjection) << " projections "
       << shape_.rows << "x" << shape_.cols << " (" << to_string(pixel_type_) << "), "
       << count(FrameKind::kFlat) << " flats, " << count(FrameKind::kDark) << " darks in "
       << files_.size() << " files";
  return text.str();
}

}  // namespace slicestream::detector
