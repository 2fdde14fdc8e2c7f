#include "hdf5/hdf5_attributes.hpp"

#include <gtest/gtest.h>

#include <string>

#include "hdf5/hdf5_errors.hpp"
#include "hdf5/hdf5_handle.hpp"
#include "tests/hdf5/memory_file.hpp"

namespace slicestream::hdf5 {
namespace {

// The stored bytes of a fixed-length string attribute.
std::string read_text_attribute(hid_t object, const char* name) {
  const Handle attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  EXPECT_TRUE(attribute.valid()) << name;
  const Handle type(H5Aget_type(attribute.get()), H5Tclose);
  EXPECT_EQ(H5Tget_class(type.get()), H5T_STRING);
  std::string text(H5Tget_size(type.get()), '?');
  EXPECT_GE(H5Aread(attribute.get(), type.get(), text.data()), 0);
  return text;
}

TEST(Hdf5AttributesTest, TextReadsBackAsWritten) {
  const Handle file = memory_file("attributes_test.h5");
  const std::string text = "ramp filter, cutoff 0.8 \xc2\xb5m";
  ASSERT_TRUE(write_text_attribute(file.get(), "filter", text));
  EXPECT_EQ(read_text_attribute(file.get(), "filter"), text);
}

TEST(Hdf5AttributesTest, AnEmptyTextIsOneNulByte) {
  const Handle file = memory_file("attributes_empty_test.h5");
  ASSERT_TRUE(write_text_attribute(file.get(), "end_reason", ""));
  EXPECT_EQ(read_text_attribute(file.get(), "end_reason"), std::string(1, '\0'));
}

TEST(Hdf5AttributesTest, AnAttributeThatExistsAlreadyIsRefused) {
  silence_error_printing();
  const Handle file = memory_file("attributes_twice_test.h5");
  ASSERT_TRUE(write_text_attribute(file.get(), "units", "1/mm"));
  EXPECT_FALSE(write_text_attribute(file.get(), "units", "mm"));
  EXPECT_FALSE(write_text_attribute(H5I_INVALID_HID, "units", "mm"));
  EXPECT_EQ(read_text_attribute(file.get(), "units"), "1/mm");
}

}  // namespace
}  // namespace slicestream::hdf5
