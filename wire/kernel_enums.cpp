#include "wire/kernel_enums.hpp"

#include <array>
#include <cstddef>
#include <utility>

namespace slicestream {

namespace {

// Every conversion is one table, read in both directions (tests/wire checks that it covers every
// wire value).
template <typename Enum, typename Wire, std::size_t N>
using Table = std::array<std::pair<Enum, Wire>, N>;

constexpr Table<PixelType, v1::PixelType, 3> kPixelTypes{{
    {PixelType::kUint16, v1::PIXEL_TYPE_UINT16},
    {PixelType::kUint32, v1::PIXEL_TYPE_UINT32},
    {PixelType::kFloat32, v1::PIXEL_TYPE_FLOAT32},
}};

constexpr Table<FrameKind, v1::FrameKind, 3> kFrameKinds{{
    {FrameKind::kDark, v1::FRAME_KIND_DARK},
    {FrameKind::kFlat, v1::FRAME_KIND_FLAT},
    {FrameKind::kProjection, v1::FRAME_KIND_PROJECTION},
}};

constexpr Table<FilterWindow, v1::FilterWindow, 5> kFilterWindows{{
    {FilterWindow::kRamLak, v1::FILTER_WINDOW_RAM_LAK},
    {FilterWindow::kSheppLogan, v1::FILTER_WINDOW_SHEPP_LOGAN},
    {FilterWindow::kCosine, v1::FILTER_WINDOW_COSINE},
    {FilterWindow::kHamming, v1::FILTER_WINDOW_HAMMING},
    {FilterWindow::kHann, v1::FILTER_WINDOW_HANN},
}};

template <typename Enum, typename Wire, std::size_t N>
Wire wire_of(const Table<Enum, Wire, N>& table, Enum value, Wire unspecified) {
  for (const auto& [ours, wire] : table) {
    if (ours == value) return wire;
  }
  return unspecified;
}

template <typename Enum, typename Wire, std::size_t N>
std::optional<Enum> value_of(const Table<Enum, Wire, N>& table, int wire_value) {
  for (const auto& [ours, wire] : table) {
    if (static_cast<int>(wire) == wire_value) return ours;
  }
  return std::nullopt;
}

}  // namespace

v1::PixelType to_wire(PixelType type) {
  return wire_of(kPixelTypes, type, v1::PIXEL_TYPE_UNSPECIFIED);
}

std::optional<PixelType> pixel_type_from_wire(int value) {
  return value_of(kPixelTypes, value);
}

v1::FrameKind to_wire(FrameKind kind) {
  return wire_of(kFrameKinds, kind, v1::FRAME_KIND_UNSPECIFIED);
}

std::optional<FrameKind> frame_kind_from_wire(int value) {
  return value_of(kFrameKinds, value);
}

v1::FilterWindow to_wire(FilterWindow window) {
  return wire_of(kFilterWindows, window, v1::FILTER_WINDOW_UNSPECIFIED);
}

std::optional<FilterWindow> filter_window_from_wire(int value) {
  return value_of(kFilterWindows, value);
}

}  // namespace slicestream
