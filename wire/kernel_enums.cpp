#include "wire/kernel_enums.hpp"

namespace slicestream {

v1::PixelType to_wire(PixelType type) {
  switch (type) {
    case PixelType::kUint16:
      return v1::PIXEL_TYPE_UINT16;
    case PixelType::kUint32:
      return v1::PIXEL_TYPE_UINT32;
    case PixelType::kFloat32:
      return v1::PIXEL_TYPE_FLOAT32;
  }
  return v1::PIXEL_TYPE_UNSPECIFIED;
}

v1::FrameKind to_wire(FrameKind kind) {
  switch (kind) {
    case FrameKind::kDark:
      return v1::FRAME_KIND_DARK;
    case FrameKind::kFlat:
      return v1::FRAME_KIND_FLAT;
    case FrameKind::kProjection:
      return v1::FRAME_KIND_PROJECTION;
  }
  return v1::FRAME_KIND_UNSPECIFIED;
}

v1::FilterWindow to_wire(FilterWindow window) {
  switch (window) {
    case FilterWindow::kRamLak:
      return v1::FILTER_WINDOW_RAM_LAK;
    case FilterWindow::kSheppLogan:
      return v1::FILTER_WINDOW_SHEPP_LOGAN;
    case FilterWindow::kCosine:
      return v1::FILTER_WINDOW_COSINE;
    case FilterWindow::kHamming:
      return v1::FILTER_WINDOW_HAMMING;
    case FilterWindow::kHann:
      return v1::FILTER_WINDOW_HANN;
  }
  return v1::FILTER_WINDOW_UNSPECIFIED;
}

std::optional<PixelType> pixel_type_from_wire(int value) {
  switch (value) {
    case v1::PIXEL_TYPE_UINT16:
      return PixelType::kUint16;
    case v1::PIXEL_TYPE_UINT32:
      return PixelType::kUint32;
    case v1::PIXEL_TYPE_FLOAT32:
      return PixelType::kFloat32;
    default:
      return std::nullopt;
  }
}

std::optional<FrameKind> frame_kind_from_wire(int value) {
  switch (value) {
    case v1::FRAME_KIND_DARK:
      return FrameKind::kDark;
    case v1::FRAME_KIND_FLAT:
      return FrameKind::kFlat;
    case v1::FRAME_KIND_PROJECTION:
      return FrameKind::kProjection;
    default:
      return std::nullopt;
  }
}

std::optional<FilterWindow> filter_window_from_wire(int value) {
  switch (value) {
    case v1::FILTER_WINDOW_RAM_LAK:
      return FilterWindow::kRamLak;
    case v1::FILTER_WINDOW_SHEPP_LOGAN:
      return FilterWindow::kSheppLogan;
    case v1::FILTER_WINDOW_COSINE:
      return FilterWindow::kCosine;
    case v1::FILTER_WINDOW_HAMMING:
      return FilterWindow::kHamming;
    case v1::FILTER_WINDOW_HANN:
      return FilterWindow::kHann;
    default:
      return std::nullopt;
  }
}

}  // namespace slicestream
