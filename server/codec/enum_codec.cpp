#include "server/codec/enum_codec.hpp"

namespace slicestream {

v1::WindowMode to_wire(WindowMode mode) {
  return mode == WindowMode::kPerRotation ? v1::WINDOW_MODE_PER_ROTATION : v1::WINDOW_MODE_SLIDING;
}

std::optional<WindowMode> window_mode_from_wire(int value) {
  switch (value) {
    case v1::WINDOW_MODE_SLIDING:
      return WindowMode::kSlidingWindow;
    case v1::WINDOW_MODE_PER_ROTATION:
      return WindowMode::kPerRotation;
    default:
      return std::nullopt;
  }
}

v1::StatusCode to_wire(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return v1::STATUS_CODE_OK;
    case StatusCode::kInvalidArgument:
      return v1::STATUS_CODE_INVALID_ARGUMENT;
    case StatusCode::kNotFound:
      return v1::STATUS_CODE_NOT_FOUND;
    case StatusCode::kFailedPrecondition:
      return v1::STATUS_CODE_FAILED_PRECONDITION;
    case StatusCode::kResourceExhausted:
      return v1::STATUS_CODE_RESOURCE_EXHAUSTED;
    case StatusCode::kUnavailable:
      return v1::STATUS_CODE_UNAVAILABLE;
    case StatusCode::kInternal:
      return v1::STATUS_CODE_INTERNAL;
  }
  return v1::STATUS_CODE_INTERNAL;
}

v1::EventKind to_wire(EventKind kind) {
  switch (kind) {
    case EventKind::kScanStarted:
      return v1::EVENT_KIND_SCAN_STARTED;
    case EventKind::kScanEnded:
      return v1::EVENT_KIND_SCAN_ENDED;
    case EventKind::kError:
      return v1::EVENT_KIND_ERROR;
    case EventKind::kWarning:
      return v1::EVENT_KIND_WARNING;
  }
  return v1::EVENT_KIND_UNSPECIFIED;
}

}  // namespace slicestream
