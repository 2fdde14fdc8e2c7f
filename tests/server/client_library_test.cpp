// The client library's image files and preview planes: float32 TIFF keeps every value, PNG is
// auto-contrasted, both upright (slice row 0 is the bottom); extensions choose the format; a
// TIFF carries its pixel size in the resolution tags and the rest as JSON in ImageDescription.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <png.h>
#include <tiffio.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "clients/common/image_file.hpp"
#include "clients/common/slice_metadata.hpp"
#include "clients/common/volume_file.hpp"
#include "clients/common/volume_planes.hpp"
#include "hdf5/hdf5_handle.hpp"
#include "tests/common/temp_dir.hpp"
#include "tests/server/wire_builders.hpp"

namespace slicestream::client {
namespace {

using test::TempDir;

std::vector<float> random_image(test::Random& random, int width, int height) {
  std::vector<float> values(static_cast<std::size_t>(width * height));
  for (float& v : values)
    v = static_cast<float>(random.uniform(-0.05, 0.1));
  return values;
}

TEST(ImageFile, TiffKeepsEveryValueUpright) {
  test::Random random;
  SCOPED_TRACE(random.seed);
  TempDir dir;
  const int width = 37, height = 23;
  const std::vector<float> values = random_image(random, width, height);
  write_image(dir.file("slice.tiff"), width, height, values);
  EXPECT_FALSE(std::filesystem::exists(dir.file("slice.tiff.tmp")));

  TIFF* tiff = TIFFOpen(dir.file("slice.tiff").c_str(), "r");
  ASSERT_NE(tiff, nullptr);
  std::uint32_t w = 0, h = 0;
  std::uint16_t bits = 0, format = 0;
  TIFFGetField(tiff, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(tiff, TIFFTAG_IMAGELENGTH, &h);
  TIFFGetField(tiff, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetField(tiff, TIFFTAG_SAMPLEFORMAT, &format);
  EXPECT_EQ(w, 37u);
  EXPECT_EQ(h, 23u);
  EXPECT_EQ(bits, 32);
  EXPECT_EQ(format, SAMPLEFORMAT_IEEEFP);
  std::vector<float> row(w);
  for (std::uint32_t r = 0; r < h; ++r) {
    ASSERT_EQ(TIFFReadScanline(tiff, row.data(), r, 0), 1);
    // File row r is slice row height - 1 - r.
    const float* expected =
        values.data() + static_cast<std::size_t>(height - 1 - static_cast<int>(r)) * w;
    EXPECT_EQ(std::memcmp(row.data(), expected, w * sizeof(float)), 0) << "row " << r;
  }
  TIFFClose(tiff);
}

// A 200 x 100 vertical slice of 96 x 48 mm (0.48 mm square pixels), filtered with Hann 0.8.
TEST(ImageFile, TiffCarriesTheSliceMetadata) {
  test::Random random;
  SCOPED_TRACE(random.seed);
  TempDir dir;
  v1::SliceHeader header;
  header.set_slice_id(1);
  header.set_scan_id(7);
  header.set_width(200);
  header.set_height(100);
  header.set_projections_integrated(180);
  header.set_filter(v1::FILTER_WINDOW_HANN);
  header.set_filter_cutoff(0.8f);
  for (float v : {96.f, 0.f, 0.f, 0.f, 0.f, 48.f, -48.f, 0.f, -24.f})
    header.mutable_orientation()->add_values(v);
  const std::vector<float> values = random_image(random, 200, 100);
  write_image(dir.file("slice.tiff"), 200, 100, values, slice_metadata(header));

  TIFF* tiff = TIFFOpen(dir.file("slice.tiff").c_str(), "r");
  ASSERT_NE(tiff, nullptr);
  float x_resolution = 0, y_resolution = 0;
  std::uint16_t unit = 0;
  char* description = nullptr;
  ASSERT_EQ(TIFFGetField(tiff, TIFFTAG_XRESOLUTION, &x_resolution), 1);
  ASSERT_EQ(TIFFGetField(tiff, TIFFTAG_YRESOLUTION, &y_resolution), 1);
  ASSERT_EQ(TIFFGetField(tiff, TIFFTAG_RESOLUTIONUNIT, &unit), 1);
  ASSERT_EQ(TIFFGetField(tiff, TIFFTAG_IMAGEDESCRIPTION, &description), 1);
  const std::string text = description;
  TIFFClose(tiff);
  EXPECT_EQ(unit, RESUNIT_CENTIMETER);
  EXPECT_NEAR(x_resolution, 10 / 0.48, 1e-3);  // pixels per cm
  EXPECT_NEAR(y_resolution, 10 / 0.48, 1e-3);

  const auto f = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(f.is_object()) << text;
  EXPECT_EQ(f.at("slice_id").get<double>(), 1);
  EXPECT_EQ(f.at("scan_id").get<double>(), 7);
  EXPECT_EQ(f.at("projections_integrated").get<double>(), 180);
  EXPECT_EQ(f.at("filter").get<std::string>(), "hann");
  EXPECT_NEAR(f.at("filter_cutoff").get<double>(), 0.8, 1e-6);
  EXPECT_EQ(f.at("units").get<std::string>(), "1/mm");
  EXPECT_NEAR(f.at("pixel_size_mm").at(0).get<double>(), 0.48, 1e-9);
  EXPECT_NEAR(f.at("pixel_size_mm").at(1).get<double>(), 0.48, 1e-9);
  const auto& orientation = f.at("orientation_mm");
  EXPECT_EQ(orientation.at("y_axis").at(2).get<double>(), 48);
  EXPECT_EQ(orientation.at("base").at(0).get<double>(), -48);
  EXPECT_NE(f.at("row_order").get<std::string>().find("top"), std::string::npos);
}

TEST(ImageFile, PngIsAutoContrastedAndUpright) {
  TempDir dir;
  const int width = 200, height = 100;
  // A ramp along x from 0 to 1, with one hot pixel that auto-contrast must ignore.
  std::vector<float> values(static_cast<std::size_t>(width * height));
  for (int j = 0; j < height; ++j) {
    for (int i = 0; i < width; ++i) {
      values[static_cast<std::size_t>(j * width + i)] = static_cast<float>(i) / (width - 1);
    }
  }
  values[0] = 1000.0f;        // slice row 0 (bottom), column 0
  values[1] = std::nanf("");  // non-finite: drawn black
  write_image(dir.file("slice.PNG"), width, height, values);

  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  ASSERT_NE(png_image_begin_read_from_file(&image, dir.file("slice.PNG").c_str()), 0)
      << image.message;
  image.format = PNG_FORMAT_GRAY;
  std::vector<std::uint8_t> grey(PNG_IMAGE_SIZE(image));
  ASSERT_NE(png_image_finish_read(&image, nullptr, grey.data(), 0, nullptr), 0) << image.message;
  ASSERT_EQ(image.width, 200u);
  ASSERT_EQ(image.height, 100u);
  auto at = [&](int column, int file_row) {
    return grey[static_cast<std::size_t>(file_row * width + column)];
  };
  // The ramp spans (nearly) the full grey range despite the hot pixel.
  EXPECT_LE(at(2, 0), 3);
  EXPECT_GE(at(width - 3, 0), 250);
  EXPECT_NEAR(at(width / 2, 50), 128, 4);
  // Slice row 0 is the file's last row: the hot pixel saturates there, the NaN is black.
  EXPECT_EQ(at(0, height - 1), 255);
  EXPECT_EQ(at(1, height - 1), 0);
}

TEST(ImageFile, AutoContrastPercentiles) {
  std::vector<float> values(1001);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i);
  values.push_back(std::numeric_limits<float>::infinity());
  const ContrastWindow window = auto_contrast(values, 0.5, 99.5);
  EXPECT_NEAR(window.low, 5, 1);
  EXPECT_NEAR(window.high, 995, 1);
  const ContrastWindow none = auto_contrast({std::nanf("")});
  EXPECT_EQ(none.low, 0);
  EXPECT_EQ(none.high, 1);
}

TEST(ImageFile, FormatsAndErrors) {
  EXPECT_EQ(image_format_for("a/b.tif"), ImageFormat::kTiffFloat32);
  EXPECT_EQ(image_format_for("x.TIFF"), ImageFormat::kTiffFloat32);
  EXPECT_EQ(image_format_for("x.png"), ImageFormat::kPng8);
  EXPECT_THROW(image_format_for("x.jpg"), ClientError);
  EXPECT_THROW(image_format_for("dir.png/file"), ClientError);
  TempDir dir;
  EXPECT_THROW(write_image(dir.file("x.png"), 4, 4, std::vector<float>(15)), ClientError);
  EXPECT_THROW(write_image("/nonexistent-dir/x.tiff", 2, 2, std::vector<float>(4)), ClientError);
  EXPECT_THROW(write_image("/nonexistent-dir/x.png", 2, 2, std::vector<float>(4)), ClientError);
}

v1::VolumeChunkHeader volume_header(int nx, int ny, int nz) {
  v1::VolumeChunkHeader header;
  header.set_scan_id(5);
  header.set_size_x(static_cast<std::uint32_t>(nx));
  header.set_size_y(static_cast<std::uint32_t>(ny));
  header.set_size_z(static_cast<std::uint32_t>(nz));
  header.set_projections_integrated(90);
  header.set_filter(v1::FILTER_WINDOW_RAM_LAK);
  header.set_filter_cutoff(1);
  v1::VolumeBox* box = header.mutable_box();
  box->mutable_min_mm()->set_x(-10);
  box->mutable_min_mm()->set_y(-9);
  box->mutable_min_mm()->set_z(-5);
  box->mutable_max_mm()->set_x(10);
  box->mutable_max_mm()->set_y(9);
  box->mutable_max_mm()->set_z(5);
  return header;
}

// Chunks written one after the other make one HDF5 dataset [z][y][x] with its voxel size; the file
// appears only once finished.
TEST(VolumeFile, Hdf5ChunksMakeOneDataset) {
  test::Random random;
  SCOPED_TRACE(random.seed);
  TempDir dir;
  const int nx = 10, ny = 9, nz = 5;
  const std::vector<float> all = random_image(random, nx, ny * nz);
  const auto writer = open_volume_writer(dir.file("v.h5"), volume_header(nx, ny, nz));
  const std::size_t plane = static_cast<std::size_t>(nx * ny);
  writer->write_planes(0, 3, std::vector<float>(all.begin(), all.begin() + 3 * plane));
  EXPECT_FALSE(std::filesystem::exists(dir.file("v.h5"))) << "visible before it is complete";
  writer->write_planes(3, 2, std::vector<float>(all.begin() + 3 * plane, all.end()));
  writer->finish();

  const hdf5::Handle file(H5Fopen(dir.file("v.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  ASSERT_TRUE(file.valid());
  const hdf5::Handle dataset(H5Dopen2(file.get(), "/volume", H5P_DEFAULT), H5Dclose);
  ASSERT_TRUE(dataset.valid());
  const hdf5::Handle space(H5Dget_space(dataset.get()), H5Sclose);
  hsize_t dims[3] = {0, 0, 0};
  ASSERT_EQ(H5Sget_simple_extent_ndims(space.get()), 3);
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  EXPECT_EQ(dims[0], 5u);
  EXPECT_EQ(dims[1], 9u);
  EXPECT_EQ(dims[2], 10u);
  std::vector<float> read(all.size());
  ASSERT_GE(H5Dread(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, read.data()),
            0);
  EXPECT_EQ(read, all);
  double voxel[3] = {0, 0, 0};
  const hdf5::Handle attribute(H5Aopen(dataset.get(), "voxel_size_mm", H5P_DEFAULT), H5Aclose);
  ASSERT_GE(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, voxel), 0);
  EXPECT_DOUBLE_EQ(voxel[0], 2.0);
  EXPECT_DOUBLE_EQ(voxel[1], 2.0);
  EXPECT_DOUBLE_EQ(voxel[2], 2.0);
}

// A TIFF stack: one upright float TIFF per plane, each an axial slice at its plane's height.
TEST(VolumeFile, TiffStackHasOnePlanePerFileWithItsHeight) {
  test::Random random;
  SCOPED_TRACE(random.seed);
  TempDir dir;
  const int nx = 10, ny = 9, nz = 5;
  const std::vector<float> all = random_image(random, nx, ny * nz);
  const auto writer = open_volume_writer(dir.file("stack"), volume_header(nx, ny, nz));
  writer->write_planes(0, nz, all);
  writer->finish();
  for (int z = 0; z < nz; ++z) {
    const std::string path = dir.file("stack/plane_000" + std::to_string(z) + ".tiff");
    TIFF* tiff = TIFFOpen(path.c_str(), "r");
    ASSERT_NE(tiff, nullptr) << path;
    std::vector<float> row(static_cast<std::size_t>(nx));
    ASSERT_EQ(TIFFReadScanline(tiff, row.data(), 0, 0), 1);  // the top row: y = ny - 1
    const std::size_t top = static_cast<std::size_t>(z * nx * ny + (ny - 1) * nx);
    EXPECT_EQ(std::memcmp(row.data(), all.data() + top, row.size() * sizeof(float)), 0);
    char* description = nullptr;
    ASSERT_EQ(TIFFGetField(tiff, TIFFTAG_IMAGEDESCRIPTION, &description), 1);
    const auto json = nlohmann::json::parse(description, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(json.is_object()) << description;
    EXPECT_DOUBLE_EQ(json.at("orientation_mm").at("base").at(2).get<double>(), -5 + (z + 0.5) * 2);
    TIFFClose(tiff);
  }
}

TEST(VolumePlanes, CentralPlanesOfAPreview) {
  const int nx = 5, ny = 4, nz = 3;
  std::vector<float> volume(static_cast<std::size_t>(nx * ny * nz));
  auto value = [](int x, int y, int z) { return static_cast<float>(100 * z + 10 * y + x); };
  for (int z = 0; z < nz; ++z) {
    for (int y = 0; y < ny; ++y) {
      for (int x = 0; x < nx; ++x)
        volume[static_cast<std::size_t>((z * ny + y) * nx + x)] = value(x, y, z);
    }
  }
  const std::array<Plane, 3> planes = central_planes(nx, ny, nz, volume);
  EXPECT_EQ(planes[0].name, "xy");
  EXPECT_EQ(planes[0].width, nx);
  EXPECT_EQ(planes[0].height, ny);
  EXPECT_EQ(planes[0].values[static_cast<std::size_t>(2 * nx + 3)], value(3, 2, 1));
  EXPECT_EQ(planes[1].name, "xz");
  EXPECT_EQ(planes[1].height, nz);
  EXPECT_EQ(planes[1].values[static_cast<std::size_t>(2 * nx + 4)], value(4, 2, 2));
  EXPECT_EQ(planes[2].name, "yz");
  EXPECT_EQ(planes[2].width, ny);
  EXPECT_EQ(planes[2].values[static_cast<std::size_t>(1 * ny + 3)], value(2, 3, 1));
  EXPECT_THROW(central_planes(nx, ny, nz, std::vector<float>(7)), ClientError);
}

}  // namespace
}  // namespace slicestream::client
