#include "clients/detector/dxchange_file.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "hdf5/hdf5_handle.hpp"
#include "tests/common/temp_dir.hpp"

namespace slicestream::detector {
namespace {

using test::TempDir;

// Writes DXchange-like files with the HDF5 C API (groups created as needed).
class H5Writer {
 public:
  explicit H5Writer(const std::string& path)
      : file_(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose) {
    EXPECT_TRUE(file_.valid());
  }

  template <typename T>
  void write(const std::string& path, hid_t type, std::vector<hsize_t> dims,
             const std::vector<T>& values) {
    const hdf5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    const hdf5::Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                             H5Sclose);
    const hdf5::Handle dataset(H5Dcreate2(file_.get(), path.c_str(), type, space.get(), lcpl.get(),
                                          H5P_DEFAULT, H5P_DEFAULT),
                               H5Dclose);
    ASSERT_TRUE(dataset.valid()) << path;
    ASSERT_GE(H5Dwrite(dataset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  }

 private:
  hdf5::Handle file_;
};

template <typename T>
std::vector<T> random_values(std::size_t n, unsigned seed, double low, double high) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  std::vector<T> values(n);
  for (T& v : values)
    v = static_cast<T>(dist(rng));
  return values;
}

template <typename T>
void expect_frame(DxchangeFile& file, FrameKind kind, std::size_t index, const std::vector<T>& all,
                  std::size_t frame_pixels, PixelType type) {
  PixelBuffer frame;
  file.read(kind, index, frame);
  ASSERT_EQ(frame.type, type);
  ASSERT_EQ(frame.pixels(), frame_pixels);
  for (std::size_t i = 0; i < frame_pixels; ++i) {
    ASSERT_EQ(load_pixel(type, frame.bytes.data(), i),
              static_cast<double>(all[index * frame_pixels + i]))
        << to_string(kind) << " " << index << " pixel " << i;
  }
}

TEST(DxchangeFile, Uint16ScanRoundTripsFrameByFrame) {
  TempDir dir;
  const std::string path = dir.file("scan.h5");
  const std::size_t rows = 6, cols = 7, pixels = rows * cols;
  const auto data = random_values<std::uint16_t>(5 * pixels, 1, 0, 65535);
  const auto flats = random_values<std::uint16_t>(3 * pixels, 2, 0, 65535);
  const auto darks = random_values<std::uint16_t>(2 * pixels, 3, 0, 500);
  const std::vector<double> theta = {0, 36.5, 72, 108.25, 144};
  {
    H5Writer writer(path);
    writer.write("/exchange/data", H5T_NATIVE_UINT16, {5, rows, cols}, data);
    writer.write("/exchange/data_white", H5T_NATIVE_UINT16, {3, rows, cols}, flats);
    writer.write("/exchange/data_dark", H5T_NATIVE_UINT16, {2, rows, cols}, darks);
    writer.write("/exchange/theta", H5T_NATIVE_DOUBLE, {5}, theta);
  }
  DxchangeFile file(path);
  EXPECT_EQ(file.shape(), (DetectorShape{6, 7}));
  EXPECT_EQ(file.pixel_type(), PixelType::kUint16);
  EXPECT_EQ(file.count(FrameKind::kProjection), 5u);
  EXPECT_EQ(file.count(FrameKind::kFlat), 3u);
  EXPECT_EQ(file.count(FrameKind::kDark), 2u);
  ASSERT_TRUE(file.angles_deg().has_value());
  EXPECT_EQ(*file.angles_deg(), theta);
  // Out of order on purpose: hyperslab reads do not depend on a read position.
  for (std::size_t i : {4, 0, 2, 3, 1}) {
    expect_frame(file, FrameKind::kProjection, i, data, pixels, PixelType::kUint16);
  }
  for (std::size_t i = 0; i < 3; ++i)
    expect_frame(file, FrameKind::kFlat, i, flats, pixels, PixelType::kUint16);
  for (std::size_t i = 0; i < 2; ++i)
    expect_frame(file, FrameKind::kDark, i, darks, pixels, PixelType::kUint16);
  EXPECT_NE(file.describe().find("5 projections 6x7 uint16"), std::string::npos);
  PixelBuffer frame;
  EXPECT_THROW(file.read(FrameKind::kProjection, 5, frame), std::out_of_range);
}

TEST(DxchangeFile, Float32DataAloneIsEnough) {
  TempDir dir;
  const std::string path = dir.file("linear.h5");
  const auto data = random_values<float>(3 * 4 * 5, 4, -1, 3);
  H5Writer(path).write("/exchange/data", H5T_NATIVE_FLOAT, {3, 4, 5}, data);
  DxchangeFile file(path);
  EXPECT_EQ(file.pixel_type(), PixelType::kFloat32);
  EXPECT_EQ(file.count(FrameKind::kFlat), 0u);
  EXPECT_EQ(file.count(FrameKind::kDark), 0u);
  EXPECT_FALSE(file.angles_deg().has_value());
  for (std::size_t i = 0; i < 3; ++i)
    expect_frame(file, FrameKind::kProjection, i, data, 20, PixelType::kFloat32);
  PixelBuffer frame;
  EXPECT_THROW(file.read(FrameKind::kFlat, 0, frame), std::out_of_range);
}

TEST(DxchangeFile, OtherNumericTypesAreConvertedToWireTypes) {
  TempDir dir;
  const std::string path = dir.file("types.h5");
  const auto bytes = random_values<std::uint8_t>(2 * 3 * 4, 5, 0, 255);
  const auto doubles = random_values<double>(3 * 4, 6, -2, 2);
  const std::vector<std::int32_t> ints = {-5, 0, 7, 100000, 3, 4, 5, 6, 7, 8, 9, 10};
  {
    H5Writer writer(path);
    writer.write("/exchange/data", H5T_NATIVE_UINT8, {2, 3, 4}, bytes);
    writer.write("/exchange/data_white", H5T_NATIVE_DOUBLE, {3, 4}, doubles);  // one 2D flat
    writer.write("/other/ints", H5T_NATIVE_INT32, {1, 3, 4}, ints);
  }
  DxchangeFile file(path);
  EXPECT_EQ(file.pixel_type(), PixelType::kUint16);
  expect_frame(file, FrameKind::kProjection, 1, bytes, 12, PixelType::kUint16);
  EXPECT_EQ(file.count(FrameKind::kFlat), 1u);
  PixelBuffer flat;
  file.read(FrameKind::kFlat, 0, flat);  // converted to the data's type: rounded, clamped at 0
  ASSERT_EQ(flat.type, PixelType::kUint16);

  DxchangeLayout layout;
  layout.projections = "/other/ints";
  DxchangeFile int_file(path, layout);
  EXPECT_EQ(int_file.pixel_type(), PixelType::kUint32);
  PixelBuffer frame;
  int_file.read(FrameKind::kProjection, 0, frame);
  EXPECT_EQ(load_pixel(PixelType::kUint32, frame.bytes.data(), 0), 0);  // -5 clamps to 0
  EXPECT_EQ(load_pixel(PixelType::kUint32, frame.bytes.data(), 3), 100000);
}

std::string open_error(const std::string& path) {
  try {
    DxchangeFile file(path);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "";
}

TEST(DxchangeFile, BadFilesGetClearErrors) {
  TempDir dir;
  EXPECT_NE(open_error(dir.file("missing.h5")).find("no such file"), std::string::npos);
  { std::ofstream(dir.file("text.h5")) << "not hdf5\n"; }
  EXPECT_NE(open_error(dir.file("text.h5")).find("not an HDF5 file"), std::string::npos);

  const auto frame = random_values<std::uint16_t>(4 * 5, 7, 0, 1000);
  H5Writer(dir.file("nodata.h5"))
      .write("/exchange/data_white", H5T_NATIVE_UINT16, {1, 4, 5}, frame);
  EXPECT_NE(open_error(dir.file("nodata.h5")).find("has no dataset /exchange/data"),
            std::string::npos);

  H5Writer(dir.file("flat2d.h5")).write("/exchange/data", H5T_NATIVE_UINT16, {4, 5}, frame);
  EXPECT_NE(open_error(dir.file("flat2d.h5")).find("2 dimensions"), std::string::npos);

  {
    H5Writer writer(dir.file("theta.h5"));
    writer.write("/exchange/data", H5T_NATIVE_UINT16, {1, 4, 5}, frame);
    writer.write("/exchange/theta", H5T_NATIVE_DOUBLE, {2}, std::vector<double>{0, 1});
  }
  EXPECT_NE(open_error(dir.file("theta.h5")).find("has 2 angles but"), std::string::npos);

  {
    H5Writer writer(dir.file("shape.h5"));
    writer.write("/exchange/data", H5T_NATIVE_UINT16, {1, 4, 5}, frame);
    writer.write("/exchange/data_dark", H5T_NATIVE_UINT16, {1, 5, 4}, frame);
  }
  EXPECT_NE(open_error(dir.file("shape.h5")).find("but the projections are 4x5"),
            std::string::npos);
}

// A file cut short (an interrupted copy): the error says so and how many bytes are missing,
// instead of "cannot open".
TEST(DxchangeFile, ATruncatedFileSaysWhatIsMissing) {
  TempDir dir;
  const auto frames = random_values<std::uint16_t>(10 * 32 * 32, 11, 0, 60000);
  H5Writer(dir.file("scan.h5")).write("/exchange/data", H5T_NATIVE_UINT16, {10, 32, 32}, frames);
  const auto full = std::filesystem::file_size(dir.file("scan.h5"));
  const auto kept = full / 2;
  std::filesystem::resize_file(dir.file("scan.h5"), kept);
  const std::string message = open_error(dir.file("scan.h5"));
  EXPECT_NE(message.find("truncated HDF5 file: it has " + std::to_string(kept) + " bytes"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the last " + std::to_string(full - kept) + " bytes are missing"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace slicestream::detector
