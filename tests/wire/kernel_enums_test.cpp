// Every value of the wire enums (but UNSPECIFIED) converts to the kernels' enum and back to
// itself; UNSPECIFIED and numbers outside the enum (proto3 keeps them) convert to nothing. A wire
// value added to slicestream.proto without its row in wire/kernel_enums.cpp fails here.
#include "wire/kernel_enums.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace slicestream {
namespace {

template <typename Enum, typename Wire>
void expect_both_ways(const google::protobuf::EnumDescriptor* descriptor,
                      const std::function<std::optional<Enum>(int)>& from_wire,
                      const std::function<Wire(Enum)>& to) {
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const int number = descriptor->value(i)->number();
    const std::string name = descriptor->value(i)->name();
    const std::optional<Enum> ours = from_wire(number);
    if (number == 0) {
      EXPECT_FALSE(ours.has_value()) << name;
      continue;
    }
    ASSERT_TRUE(ours.has_value()) << name << " has no counterpart";
    EXPECT_EQ(static_cast<int>(to(*ours)), number) << name;
  }
  EXPECT_FALSE(from_wire(descriptor->value_count() + 100).has_value());
  EXPECT_FALSE(from_wire(-1).has_value());
}

TEST(KernelEnums, PixelTypes) {
  expect_both_ways<PixelType, v1::PixelType>(v1::PixelType_descriptor(), pixel_type_from_wire,
                                             [](PixelType type) { return to_wire(type); });
  EXPECT_EQ(to_wire(PixelType::kFloat32), v1::PIXEL_TYPE_FLOAT32);
}

TEST(KernelEnums, FrameKinds) {
  expect_both_ways<FrameKind, v1::FrameKind>(v1::FrameKind_descriptor(), frame_kind_from_wire,
                                             [](FrameKind kind) { return to_wire(kind); });
  EXPECT_EQ(to_wire(FrameKind::kDark), v1::FRAME_KIND_DARK);
  EXPECT_STREQ(to_string(FrameKind::kProjection), "projection");
}

TEST(KernelEnums, FilterWindows) {
  expect_both_ways<FilterWindow, v1::FilterWindow>(
      v1::FilterWindow_descriptor(), filter_window_from_wire,
      [](FilterWindow window) { return to_wire(window); });
  EXPECT_EQ(to_wire(FilterWindow::kHann), v1::FILTER_WINDOW_HANN);
}

}  // namespace
}  // namespace slicestream
