#include "hdf5/hdf5_pixel_type.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "hdf5/hdf5_handle.hpp"
#include "tests/hdf5/memory_file.hpp"

namespace slicestream::hdf5 {
namespace {

constexpr PixelType kAllPixelTypes[] = {PixelType::kUint16, PixelType::kUint32,
                                        PixelType::kFloat32};

std::size_t bytes_per_pixel(PixelType type) {
  return type == PixelType::kUint16 ? 2 : 4;
}

// Random pixels of `type` as bytes (integers over their whole range, floats of both signs).
std::vector<unsigned char> random_pixels(PixelType type, std::size_t count, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<unsigned char> bytes(count * bytes_per_pixel(type));
  for (std::size_t i = 0; i < count; ++i) {
    unsigned char* at = bytes.data() + i * bytes_per_pixel(type);
    if (type == PixelType::kUint16) {
      const auto value = static_cast<std::uint16_t>(random());
      std::memcpy(at, &value, sizeof value);
    } else if (type == PixelType::kUint32) {
      const auto value = static_cast<std::uint32_t>(random());
      std::memcpy(at, &value, sizeof value);
    } else {
      const float value = std::normal_distribution<float>(0.f, 1e3f)(random);
      std::memcpy(at, &value, sizeof value);
    }
  }
  return bytes;
}

TEST(Hdf5PixelTypeTest, EachPixelTypeRoundTripsThroughItsNativeType) {
  for (PixelType type : kAllPixelTypes) {
    const hid_t native = native_type(type);
    EXPECT_EQ(H5Tget_size(native), bytes_per_pixel(type));
    EXPECT_EQ(pixel_type_of_stored(native), type) << static_cast<int>(type);
  }
  EXPECT_EQ(H5Tget_class(native_type(PixelType::kFloat32)), H5T_FLOAT);
  EXPECT_EQ(H5Tget_sign(native_type(PixelType::kUint16)), H5T_SGN_NONE);
  EXPECT_EQ(H5Tget_sign(native_type(PixelType::kUint32)), H5T_SGN_NONE);
}

TEST(Hdf5PixelTypeTest, PixelsWrittenAndReadBackThroughADatasetAreUnchanged) {
  const Handle file = memory_file("pixel_type_test.h5");
  const hsize_t dims[2] = {7, 11};
  const std::size_t count = dims[0] * dims[1];
  unsigned seed = 1;
  for (PixelType type : kAllPixelTypes) {
    const std::vector<unsigned char> written = random_pixels(type, count, ++seed);
    const std::string name = "pixels" + std::to_string(static_cast<int>(type));
    const Handle space(H5Screate_simple(2, dims, nullptr), H5Sclose);
    const Handle dataset(H5Dcreate2(file.get(), name.c_str(), native_type(type), space.get(),
                                    H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                         H5Dclose);
    ASSERT_TRUE(dataset.valid());
    ASSERT_GE(
        H5Dwrite(dataset.get(), native_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, written.data()),
        0);
    const Handle stored(H5Dget_type(dataset.get()), H5Tclose);
    ASSERT_EQ(pixel_type_of_stored(stored.get()), type);
    std::vector<unsigned char> read(written.size());
    ASSERT_GE(H5Dread(dataset.get(), native_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, read.data()),
              0);
    EXPECT_EQ(read, written) << name;
  }
}

TEST(Hdf5PixelTypeTest, StoredTypesOfOtherWidthsMapToTheTypeThatHoldsThem) {
  EXPECT_EQ(pixel_type_of_stored(H5T_NATIVE_UINT8), PixelType::kUint16);
  EXPECT_EQ(pixel_type_of_stored(H5T_STD_I16BE), PixelType::kUint16);
  EXPECT_EQ(pixel_type_of_stored(H5T_NATIVE_INT32), PixelType::kUint32);
  EXPECT_EQ(pixel_type_of_stored(H5T_NATIVE_UINT64), PixelType::kUint32);
  EXPECT_EQ(pixel_type_of_stored(H5T_NATIVE_DOUBLE), PixelType::kFloat32);
  EXPECT_EQ(pixel_type_of_stored(H5T_IEEE_F32BE), PixelType::kFloat32);
}

TEST(Hdf5PixelTypeTest, StringsAndCompoundsAreNotPixels) {
  const Handle text(H5Tcopy(H5T_C_S1), H5Tclose);
  EXPECT_EQ(pixel_type_of_stored(text.get()), std::nullopt);
  const Handle compound(H5Tcreate(H5T_COMPOUND, 8), H5Tclose);
  EXPECT_EQ(pixel_type_of_stored(compound.get()), std::nullopt);
}

}  // namespace
}  // namespace slicestream::hdf5
