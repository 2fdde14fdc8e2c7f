#include "clients/detector/tiff_stack.hpp"

#include <gtest/gtest.h>
#include <tiffio.h>

#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "clients/detector/file_list.hpp"
#include "tests/common/temp_dir.hpp"

namespace slicestream::detector {
namespace {

using test::TempDir;

struct Image {
  int width = 0;
  int height = 0;
  int bits = 16;
  int format = SAMPLEFORMAT_UINT;
  std::vector<double> values;  // row-major, row 0 first
};

Image random_image(int width, int height, int bits, int format, unsigned seed) {
  Image image{width, height, bits, format, {}};
  std::mt19937 rng(seed);
  const bool is_float = format == SAMPLEFORMAT_IEEEFP;
  const double high = is_float ? 4.0 : (bits == 8 ? 255 : (bits == 16 ? 65535 : 1e9));
  const double low = format == SAMPLEFORMAT_INT ? -high / 2 : (is_float ? -1.0 : 0.0);
  std::uniform_real_distribution<double> dist(low, format == SAMPLEFORMAT_INT ? high / 2 : high);
  for (int i = 0; i < width * height; ++i) {
    const double v = dist(rng);
    image.values.push_back(is_float ? static_cast<double>(static_cast<float>(v)) : std::floor(v));
  }
  return image;
}

void store_sample(const Image& image, std::vector<unsigned char>& out, std::size_t i, double v) {
  const std::size_t bytes = static_cast<std::size_t>(image.bits / 8);
  unsigned char* at = out.data() + i * bytes;
  if (image.format == SAMPLEFORMAT_IEEEFP) {
    const float f = static_cast<float>(v);
    std::memcpy(at, &f, 4);
  } else if (image.format == SAMPLEFORMAT_INT) {
    const std::int16_t s = static_cast<std::int16_t>(v);
    std::memcpy(at, &s, 2);
  } else if (image.bits == 8) {
    *at = static_cast<unsigned char>(v);
  } else if (image.bits == 16) {
    const std::uint16_t s = static_cast<std::uint16_t>(v);
    std::memcpy(at, &s, 2);
  } else {
    const std::uint32_t s = static_cast<std::uint32_t>(v);
    std::memcpy(at, &s, 4);
  }
}

// Writes `pages` as one (multi-page) TIFF: striped with deflate, or tiled 16 x 16.
void write_tiff(const std::string& path, const std::vector<Image>& pages, bool tiled = false) {
  TIFF* tiff = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(tiff, nullptr);
  for (const Image& image : pages) {
    TIFFSetField(tiff, TIFFTAG_IMAGEWIDTH, image.width);
    TIFFSetField(tiff, TIFFTAG_IMAGELENGTH, image.height);
    TIFFSetField(tiff, TIFFTAG_BITSPERSAMPLE, image.bits);
    TIFFSetField(tiff, TIFFTAG_SAMPLEFORMAT, image.format);
    TIFFSetField(tiff, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tiff, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tiff, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tiff, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
    const std::size_t bytes = static_cast<std::size_t>(image.bits / 8);
    if (!tiled) {
      TIFFSetField(tiff, TIFFTAG_ROWSPERSTRIP, 3);
      std::vector<unsigned char> row(static_cast<std::size_t>(image.width) * bytes);
      for (int r = 0; r < image.height; ++r) {
        for (int c = 0; c < image.width; ++c) {
          store_sample(image, row, static_cast<std::size_t>(c),
                       image.values[static_cast<std::size_t>(r * image.width + c)]);
        }
        ASSERT_GE(TIFFWriteScanline(tiff, row.data(), static_cast<std::uint32_t>(r), 0), 0);
      }
    } else {
      TIFFSetField(tiff, TIFFTAG_TILEWIDTH, 16);
      TIFFSetField(tiff, TIFFTAG_TILELENGTH, 16);
      std::vector<unsigned char> tile(16 * 16 * bytes);
      for (int y = 0; y < image.height; y += 16) {
        for (int x = 0; x < image.width; x += 16) {
          std::fill(tile.begin(), tile.end(), 0);
          for (int r = 0; r < 16 && y + r < image.height; ++r) {
            for (int c = 0; c < 16 && x + c < image.width; ++c) {
              store_sample(image, tile, static_cast<std::size_t>(r * 16 + c),
                           image.values[static_cast<std::size_t>((y + r) * image.width + x + c)]);
            }
          }
          ASSERT_GE(TIFFWriteTile(tiff, tile.data(), static_cast<std::uint32_t>(x),
                                  static_cast<std::uint32_t>(y), 0, 0),
                    0);
        }
      }
    }
    ASSERT_TRUE(TIFFWriteDirectory(tiff));
  }
  TIFFClose(tiff);
}

void expect_frame(TiffStack& stack, FrameKind kind, std::size_t index, const Image& image) {
  PixelBuffer frame;
  stack.read(kind, index, frame);
  ASSERT_EQ(frame.shape, (DetectorShape{image.height, image.width}));
  for (std::size_t i = 0; i < frame.pixels(); ++i) {
    ASSERT_EQ(load_pixel(frame.type, frame.bytes.data(), i), image.values[i])
        << to_string(kind) << " " << index << " pixel " << i;
  }
}

TEST(NaturalOrder, NumbersCompareByValue) {
  EXPECT_TRUE(natural_less("proj_2.tif", "proj_10.tif"));
  EXPECT_FALSE(natural_less("proj_10.tif", "proj_2.tif"));
  EXPECT_TRUE(natural_less("proj_002.tif", "proj_10.tif"));
  EXPECT_TRUE(natural_less("a9", "b1"));
  EXPECT_TRUE(natural_less("scan1_9", "scan2_1"));
  EXPECT_TRUE(natural_less("x", "x1"));
  EXPECT_FALSE(natural_less("same", "same"));
}

TEST(TiffStack, DirectoryOfUint16FramesInNaturalOrder) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "proj");
  std::vector<Image> frames;
  for (int i = 1; i <= 11; ++i) {
    frames.push_back(random_image(13, 9, 16, SAMPLEFORMAT_UINT, static_cast<unsigned>(i)));
    write_tiff(dir.file("proj/proj_" + std::to_string(i) + ".tif"), {frames.back()});
  }
  { std::ofstream(dir.file("proj/notes.txt")) << "ignored\n"; }
  TiffStack stack({dir.file("proj"), "", ""});
  EXPECT_EQ(stack.shape(), (DetectorShape{9, 13}));
  EXPECT_EQ(stack.pixel_type(), PixelType::kUint16);
  ASSERT_EQ(stack.count(FrameKind::kProjection), 11u);
  EXPECT_EQ(stack.count(FrameKind::kDark), 0u);
  EXPECT_FALSE(stack.angles_deg().has_value());
  for (std::size_t i = 0; i < 11; ++i)
    expect_frame(stack, FrameKind::kProjection, i, frames[i]);

  // The same files through a glob pattern.
  TiffStack globbed({dir.file("proj/proj_*.tif"), "", ""});
  ASSERT_EQ(globbed.count(FrameKind::kProjection), 11u);
  expect_frame(globbed, FrameKind::kProjection, 9, frames[9]);
}

TEST(TiffStack, MultiPageFloatProjectionsWithDarkAndFlatGlobs) {
  TempDir dir;
  std::vector<Image> projections;
  for (unsigned i = 0; i < 5; ++i)
    projections.push_back(random_image(10, 7, 32, SAMPLEFORMAT_IEEEFP, 20 + i));
  write_tiff(dir.file("projections.tiff"), projections);
  const Image dark0 = random_image(10, 7, 32, SAMPLEFORMAT_IEEEFP, 40);
  const Image dark1 = random_image(10, 7, 32, SAMPLEFORMAT_IEEEFP, 41);
  const Image flat = random_image(10, 7, 32, SAMPLEFORMAT_IEEEFP, 42);
  write_tiff(dir.file("dark_0.tif"), {dark0});
  write_tiff(dir.file("dark_1.tif"), {dark1});
  write_tiff(dir.file("flat.tif"), {flat});
  TiffStack stack({dir.file("projections.tiff"), dir.file("dark_*.tif"), dir.file("flat.tif")});
  EXPECT_EQ(stack.pixel_type(), PixelType::kFloat32);
  ASSERT_EQ(stack.count(FrameKind::kProjection), 5u);
  ASSERT_EQ(stack.count(FrameKind::kDark), 2u);
  ASSERT_EQ(stack.count(FrameKind::kFlat), 1u);
  for (std::size_t i : {0, 1, 2, 3, 4, 2, 0}) {  // sequential and random page access
    expect_frame(stack, FrameKind::kProjection, i, projections[i]);
  }
  expect_frame(stack, FrameKind::kDark, 1, dark1);
  expect_frame(stack, FrameKind::kDark, 0, dark0);
  expect_frame(stack, FrameKind::kFlat, 0, flat);
  EXPECT_NE(stack.describe().find("5 projections 7x10"), std::string::npos);
}

TEST(TiffStack, TiledAndNarrowerTypesReadExactly) {
  TempDir dir;
  const Image tiled = random_image(40, 24, 16, SAMPLEFORMAT_UINT, 50);  // partial edge tiles
  write_tiff(dir.file("tiled.tif"), {tiled}, true);
  TiffStack tiled_stack({dir.file("tiled.tif"), "", ""});
  expect_frame(tiled_stack, FrameKind::kProjection, 0, tiled);

  const Image bytes = random_image(9, 5, 8, SAMPLEFORMAT_UINT, 51);
  write_tiff(dir.file("bytes.tif"), {bytes});
  TiffStack byte_stack({dir.file("bytes.tif"), "", ""});
  EXPECT_EQ(byte_stack.pixel_type(), PixelType::kUint16);
  expect_frame(byte_stack, FrameKind::kProjection, 0, bytes);

  const Image signed_image = random_image(9, 5, 16, SAMPLEFORMAT_INT, 52);
  write_tiff(dir.file("signed.tif"), {signed_image});
  TiffStack signed_stack({dir.file("signed.tif"), "", ""});
  EXPECT_EQ(signed_stack.pixel_type(), PixelType::kFloat32);
  expect_frame(signed_stack, FrameKind::kProjection, 0, signed_image);

  const Image wide = random_image(9, 5, 32, SAMPLEFORMAT_UINT, 53);
  write_tiff(dir.file("wide.tif"), {wide});
  TiffStack wide_stack({dir.file("wide.tif"), "", ""});
  EXPECT_EQ(wide_stack.pixel_type(), PixelType::kUint32);
  expect_frame(wide_stack, FrameKind::kProjection, 0, wide);
}

std::string open_error(const TiffStackPaths& paths) {
  try {
    TiffStack stack(paths);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "";
}

TEST(TiffStack, BadInputGetsClearErrors) {
  TempDir dir;
  EXPECT_NE(open_error({dir.file("nothing_*.tif"), "", ""}).find("no files match"),
            std::string::npos);
  std::filesystem::create_directories(dir.path() / "empty");
  EXPECT_NE(open_error({dir.file("empty"), "", ""}).find("no .tif/.tiff files"), std::string::npos);
  { std::ofstream(dir.file("fake.tif")) << "not a tiff\n"; }
  EXPECT_NE(open_error({dir.file("fake.tif"), "", ""}).find("cannot open as TIFF"),
            std::string::npos);

  // An RGB image.
  TIFF* rgb = TIFFOpen(dir.file("rgb.tif").c_str(), "w");
  ASSERT_NE(rgb, nullptr);
  TIFFSetField(rgb, TIFFTAG_IMAGEWIDTH, 4);
  TIFFSetField(rgb, TIFFTAG_IMAGELENGTH, 2);
  TIFFSetField(rgb, TIFFTAG_BITSPERSAMPLE, 8);
  TIFFSetField(rgb, TIFFTAG_SAMPLESPERPIXEL, 3);
  TIFFSetField(rgb, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
  TIFFSetField(rgb, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  std::vector<unsigned char> row(12, 7);
  for (std::uint32_t r = 0; r < 2; ++r)
    TIFFWriteScanline(rgb, row.data(), r, 0);
  TIFFClose(rgb);
  EXPECT_NE(open_error({dir.file("rgb.tif"), "", ""}).find("single-channel"), std::string::npos);

  write_tiff(dir.file("p.tif"), {random_image(8, 6, 16, SAMPLEFORMAT_UINT, 1)});
  write_tiff(dir.file("f.tif"), {random_image(6, 8, 16, SAMPLEFORMAT_UINT, 2)});
  EXPECT_NE(open_error({dir.file("p.tif"), "", dir.file("f.tif")}).find("6x8 (width x height)"),
            std::string::npos);
}

}  // namespace
}  // namespace slicestream::detector
