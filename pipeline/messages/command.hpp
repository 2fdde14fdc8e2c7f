// Requests from viewers and control clients, and their replies (pipeline types; server/ maps
// them to and from slicestream.v1 protobuf messages).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kernels/filter_config.hpp"
#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "pipeline/backend/memory_charge.hpp"
#include "pipeline/backend/refinement_settings.hpp"
#include "pipeline/messages/metrics_snapshot.hpp"
#include "pipeline/messages/parameters.hpp"
#include "pipeline/messages/scan_description.hpp"
#include "pipeline/messages/scan_state.hpp"
#include "pipeline/messages/slice_values.hpp"

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
  // The orientation is in the box's normalised coordinates [-1, 1]^3 (RECAST3D's) and is placed
  // on every scan's box; false: world mm, where the slice stays.
  bool box_coordinates = false;
};
struct RemoveSliceCommand {
  std::uint32_t slice_id = 0;
};
// Every client slice goes, and the default slices come back (on the current scan's box at once).
struct ResetSlicesCommand {};
// Planes [first_plane, first_plane + plane_count) along z of a size_x x size_y x size_z volume
// over `box` (none: the scan's box), from the current window: a volume is saved chunk by chunk.
struct GetVolumeCommand {
  std::optional<VolumeBox> box;
  int size_x = 0;
  int size_y = 0;
  int size_z = 0;
  int first_plane = 0;
  int plane_count = 0;
};
struct GetSliceCommand {  // one-shot: reconstruct from the current window, reply with the data
  SliceOrientation orientation;
  int width = 0;
  int height = 0;
};
struct GetStatusCommand {};

// Switches refinement of live slice `slice_id` on or off (pipeline/slice_refinements.hpp): an
// axial slice of a parallel-beam scan or the central slice of a cone-beam scan, refined from its
// FBP image by at most `iterations` iterations of `settings` (refinement_settings.hpp; by default
// FISTA with non-negativity, TV and the discrepancy stop; 0 iterations: only its data-consistency
// residual is measured) at most every `interval_s`.
struct SetRefinementCommand {
  std::uint32_t slice_id = 0;
  bool enabled = true;
  int iterations = kDefaultRefinementIterations;
  double interval_s = 1;
  RefinementSettings settings;
};

using Command =
    std::variant<SetSliceCommand, RemoveSliceCommand, GetSliceCommand, GetStatusCommand,
                 SetParametersCommand, SetRefinementCommand, ResetSlicesCommand, GetVolumeCommand>;

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
  // The first image of a slice set anew (SetSlice, ResetSlices): a viewer waits for it, so the
  // publish stage and the sinks send it before routine updates of other slices.
  bool moved = false;
  FilterConfig filter;  // the ramp filter in force when it was read
  // width * height, row 0 at the bottom, x fastest; a published image's may be a GPU readback's
  // page-locked buffer (slice_values.hpp).
  SliceValues values;
  // Its share of the memory budget (memory_budget.hpp), held by every copy and by the server's
  // outgoing message until the last is gone; null for an image nobody charged.
  std::shared_ptr<MemoryCharge> memory;
};

// A view of a shared image's values that keeps the image, and with it their memory charge, alive:
// what a sink that keeps a handed-over image (PublishSink::publish_shared_slice) holds instead of
// a copy.
inline SliceValues shared_values(const std::shared_ptr<const SliceImage>& image) {
  return SliceValues::shared(image, image->values.data(), image->values.size());
}

// The reply to GetVolumeCommand.
struct VolumeChunk {
  std::uint64_t scan_id = 0;
  VolumeBox box;  // the whole volume's
  int size_x = 0;
  int size_y = 0;
  int size_z = 0;
  int first_plane = 0;
  int plane_count = 0;
  std::uint64_t projections_integrated = 0;
  FilterConfig filter;
  std::vector<float> values;  // plane_count * size_y * size_x, x fastest, then y, then z
  // Its share of the memory budget, held until the server has sent the chunk.
  std::shared_ptr<MemoryCharge> memory;
};

// Where the refinement of one slice stands (GetStatus).
struct RefinementStatus {
  std::uint32_t slice_id = 0;
  int iterations = 0;  // requested per refinement, at most (0: residual only)
  double interval_s = 0;
  RefinementSettings settings;  // requested
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
  double refined_residual = 0;               // after `iterations_run` iterations
  int iterations_run = 0;
  RefinementSummary summary;  // what it did: method, regulariser, why it stopped, noise level
  double duration_ms = 0;     // wall time on the refinement worker (a matrix build included)
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

// How a live slice is placed when a scan starts (docs/protocol.md, "Slices across scans").
enum class SlicePlacement {
  kDefault,  // one of the server's slices 0-2: on every scan's box, square pixels
  kBox,      // a client's, in box coordinates: on every scan's box
  kWorld,    // a client's, in world mm: stays where it is
};
const char* to_string(SlicePlacement placement);

struct SliceInfo {
  std::uint32_t slice_id = 0;
  SlicePlacement placement = SlicePlacement::kWorld;
  SliceOrientation box_orientation;  // kBox: as the client gave it
  bool outside_box = false;          // it misses the current scan's box: it shows nothing
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
  std::string scan_end_reason;  // why the scan ended ("ScanEnd received ...", "no data for ...")
  // The same scan as its ScanBegin described it (the pixel size, distances and units of `status`).
  std::optional<ScanDescription> scan_description;
  std::vector<SetSliceCommand> slices;  // in world mm
  std::vector<SliceInfo> slice_info;    // one per slice, in the same order
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
  std::optional<VolumeChunk> volume;     // GetVolume
};

using ReplyCallback = std::function<void(CommandReply)>;

}  // namespace slicestream
