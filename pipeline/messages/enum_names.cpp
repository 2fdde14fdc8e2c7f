// Names of the pipeline's enums, as they appear in logs, events and the protocol docs.
#include "pipeline/messages/command.hpp"
#include "pipeline/messages/publish_sink.hpp"

namespace slicestream {

const char* to_string(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kResourceExhausted:
      return "resource_exhausted";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

const char* to_string(SlicePlacement placement) {
  switch (placement) {
    case SlicePlacement::kDefault:
      return "default";
    case SlicePlacement::kBox:
      return "box";
    case SlicePlacement::kWorld:
      return "world";
  }
  return "unknown";
}

const char* to_string(EventKind kind) {
  switch (kind) {
    case EventKind::kScanStarted:
      return "scan_started";
    case EventKind::kScanEnded:
      return "scan_ended";
    case EventKind::kError:
      return "error";
    case EventKind::kWarning:
      return "warning";
  }
  return "unknown";
}

}  // namespace slicestream
