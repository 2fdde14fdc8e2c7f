// Requests from viewers and control clients, and their replies (pipeline types; server/ maps
// them to and from slicestream.v1 protobuf messages).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kernels/filter_config.hpp"
#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "pipeline/messages/metrics_snapshot.hpp"
#include "pipeline/messages/parameters.hpp"
#include "pipeline/messages/scan_state.hpp"

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
  Status() = default;
  Status(StatusCode code_, std::string message_, std::string reason_ = {})
      : code(code_), message(std::move(message_)), reason(std::move(reason_)) {}
  StatusCode code = StatusCode::kOk;
  std::string message;
  std::string reason;  // machine-readable cause of a refusal (Reply.reason), e.g. "not_axial"
  bool ok() const { return code == StatusCode::kOk; }
};

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

// Switches CGLS refinement of live slice `slice_id` on or off (pipeline/slice_refinements.hpp):
// an axial slice of a parallel-beam scan or the central slice of a cone-beam scan, refined from its
// FBP image by `iterations` CGLS iterations (0: only its data-consistency residual is measured) at
// most every `interval_s`.
struct SetRefinementCommand {
  std::uint32_t slice_id = 0;
  bool enabled = true;
  int iterations = 10;
  double interval_s = 1;
};

using Command = std::variant<SetSliceCommand, RemoveSliceCommand, GetSliceCommand, GetStatusCommand,
                             SetParametersCommand, SetRefinementCommand>;

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

// Where the refinement of one slice stands (GetStatus).
struct RefinementStatus {
  std::uint32_t slice_id = 0;
  int iterations = 0;  // requested per refinement (0: residual only)
  double interval_s = 0;
  // "waiting_for_scan", "unavailable" (detail says why), "collecting" (the sinogram window is
  // filling), "ready" (waiting for new data or the interval), "building_matrix", "running".
  std::string state;
  std::string detail;
  double detector_row = 0;  // continuous detector row of the slice's height (pixel centres at .0)
  int window_filled = 0;    // slots holding a sinogram row of the current window
  int window_size = 0;
  std::uint64_t refinements = 0;  // completed since the refinement was switched on
  // Of the newest completed refinement (has_result):
  bool has_result = false;
  std::uint64_t projections_integrated = 0;  // of the FBP slice it started from
  double fbp_residual = 0;                   // ||A x_fbp - b|| / ||b||
  double refined_residual = 0;               // after `iterations_run` CGLS iterations
  int iterations_run = 0;
  double duration_ms = 0;  // wall time on the refinement worker (a matrix build included)
  std::string solver;
};

// The data-consistency residual ||A x_fbp - b|| / ||b|| of one live slice's FBP image
// (GetStatus): measured automatically every RefinementLimits::residual_interval_s for every slice
// that can be checked (an axial slice that plan_refinement accepts), or by the slice's refinement.
struct SliceResidual {
  std::uint32_t slice_id = 0;
  // "check": measured automatically; "refinement": by the slice's SetRefinement.
  std::string source;
  double interval_s = 0;  // at most this often (and only when new projections arrived)
  // "off" (automatic checks switched off), "waiting_for_scan", "unavailable" (reason says why),
  // "collecting" (the sinogram window is filling), "ready", "building_matrix", "running".
  std::string state;
  std::string reason;  // machine-readable cause of "off" / "unavailable", e.g. "not_axial"
  std::string detail;  // why, in words; also the last failure
  // Of the newest measurement (has_residual):
  bool has_residual = false;
  double residual = 0;
  std::uint64_t scan_id = 0;
  // The window measured: the newest window_size of these projections of the FBP image.
  std::uint64_t projections_integrated = 0;
  int window_size = 0;
  double age_s = 0;  // since it was measured
};

// The newest scan as GetStatus describes it (viewers draw its box).
struct ScanSummary {
  VolumeBox volume;
  BeamKind beam = BeamKind::kParallel;
  int detector_rows = 0;
  int detector_cols = 0;
  int projections_per_rotation = 0;
  std::string description;
};

// What the backend holds of the memory it manages: host memory (cpu) or device memory (cuda).
struct BackendMemory {
  std::size_t total_bytes = 0;
  std::size_t used_by_scan_bytes = 0;      // store, buffers and targets
  std::size_t used_by_refiners_bytes = 0;  // slice refiners' matrices and workspaces
};

struct StatusReport {
  std::string backend;
  std::string backend_device;
  BackendMemory memory;
  std::optional<ScanSummary> scan;  // absent before the first scan
  bool scan_active = false;
  std::uint64_t scan_id = 0;
  ScanState scan_state = ScanState::kIdle;
  std::vector<SetSliceCommand> slices;
  std::vector<RefinementStatus> refinements;
  std::vector<SliceResidual> residuals;  // one per live slice
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
