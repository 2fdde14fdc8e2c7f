// Requests from viewers and control clients, and their replies (pipeline types; server/ maps
// them to and from slicestream.v1 protobuf messages).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kernels/filter_config.hpp"
#include "kernels/grid_spec.hpp"
#include "pipeline/metrics.hpp"

namespace slicestream {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // malformed or out-of-range request
  kNotFound,            // unknown slice id
  kFailedPrecondition,  // e.g. no scan active yet
  kResourceExhausted,   // too many slices, too large
  kUnavailable,         // shutting down, queue full
  kInternal,
};
const char* to_string(StatusCode code);

struct Status {
  StatusCode code = StatusCode::kOk;
  std::string message;
  bool ok() const { return code == StatusCode::kOk; }
};

enum class WindowMode { kSlidingWindow, kPerRotation };
const char* to_string(WindowMode mode);

struct SetSliceCommand {
  std::uint32_t slice_id = 0;
  SliceOrientation orientation;
  int width = 0;
  int height = 0;
};
struct RemoveSliceCommand {
  std::uint32_t slice_id = 0;
};
struct GetSliceCommand {  // one-shot: reconstruct from the current window, reply with the data
  SliceOrientation orientation;
  int width = 0;
  int height = 0;
};
struct GetStatusCommand {};
struct SetParametersCommand {  // unset fields keep their value
  std::optional<FilterConfig> filter;
  std::optional<WindowMode> window_mode;
  std::optional<double> rotation_axis_offset_px;
  std::optional<double> publish_rate_hz;  // per slice; 0 = every update
  std::optional<double> preview_interval_s;
};

using Command = std::variant<SetSliceCommand, RemoveSliceCommand, GetSliceCommand, GetStatusCommand,
                             SetParametersCommand>;

struct Parameters {
  FilterConfig filter;
  WindowMode window_mode = WindowMode::kSlidingWindow;
  double rotation_axis_offset_px = 0;
  double publish_rate_hz = 0;
  double preview_interval_s = 1;
};

struct SliceImage {
  std::uint32_t slice_id = 0;
  SliceOrientation orientation;
  int width = 0;
  int height = 0;
  std::uint64_t scan_id = 0;
  std::uint64_t projections_integrated = 0;  // frames integrated into the slice since scan start
  std::uint64_t newest_detector_timestamp_ns = 0;
  std::uint64_t newest_arrival_ns = 0;  // arrival of the newest integrated frame
  std::uint64_t sequence = 0;           // per-slice publication counter
  std::vector<float> values;            // width * height, row 0 at the bottom, x fastest
};

struct StatusReport {
  std::string backend;
  std::string backend_device;
  bool scan_active = false;
  std::uint64_t scan_id = 0;
  std::string scan_state;  // "idle", "calibrating", "reconstructing", "ended"
  std::vector<SetSliceCommand> slices;
  Parameters parameters;
  MetricsSnapshot metrics;
};

struct CommandReply {
  Status status;
  std::optional<SliceImage> slice;       // GetSlice
  std::optional<StatusReport> report;    // GetStatus
  std::optional<Parameters> parameters;  // SetParameters (the values now in force)
};

using ReplyCallback = std::function<void(CommandReply)>;

}  // namespace slicestream
