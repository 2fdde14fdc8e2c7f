// Why the pipeline did not use a message it was given (a frame, a ScanBegin or a ScanEnd): every
// discard is counted under its reason's name (MetricsSnapshot::discards, in messages), logged and
// published as an event. Pixels are not messages: the preprocessing guards count them apart
// (pixels_non_finite, pixels_clamped). Rejections decided
// outside the pipeline (the server's codecs) are counted under their own names
// (Pipeline::report_rejected).
#pragma once

#include "pipeline/backend/name_table.hpp"

namespace slicestream {

enum class DiscardReason {
  kNoActiveScan,          // frame or ScanEnd before any ScanBegin
  kWrongScanId,           // frame or ScanEnd of another scan than the active one
  kScanEnded,             // frame or ScanEnd of a scan that has ended
  kScanRejected,          // frame of a scan whose ScanBegin was refused
  kInvalidScan,           // ScanBegin failing validate_scan_description
  kUnknownKind,           // frame kind outside dark/flat/projection
  kShapeMismatch,         // rows, cols or pixel type differ from the scan
  kBadPayloadSize,        // payload missing or not rows x cols x pixel bytes
  kIndexOutOfRange,       // dark/flat index >= declared count
  kLateCalibrationFrame,  // dark/flat after the calibration was applied
  kPositionOutOfRange,    // position >= projections per rotation
  kInvalidPlacement,      // both position and angle, or a dark/flat with either
  kAngleNotSupported,     // explicit angle for a vector geometry
  kInvalidAngle,          // non-finite angle
  kBackendError,          // frame lost to a backend failure
  kShutdown,              // accepted message left in a queue at stop, or submitted after it
  kShutdownUnpublished,   // publication or event not delivered because of the stop
};

inline constexpr NameTable<DiscardReason, 17> kDiscardReasonNames{{
    {DiscardReason::kNoActiveScan, "no_active_scan"},
    {DiscardReason::kWrongScanId, "wrong_scan_id"},
    {DiscardReason::kScanEnded, "scan_ended"},
    {DiscardReason::kScanRejected, "scan_rejected"},
    {DiscardReason::kInvalidScan, "invalid_scan"},
    {DiscardReason::kUnknownKind, "unknown_kind"},
    {DiscardReason::kShapeMismatch, "shape_mismatch"},
    {DiscardReason::kBadPayloadSize, "bad_payload_size"},
    {DiscardReason::kIndexOutOfRange, "index_out_of_range"},
    {DiscardReason::kLateCalibrationFrame, "late_calibration_frame"},
    {DiscardReason::kPositionOutOfRange, "position_out_of_range"},
    {DiscardReason::kInvalidPlacement, "invalid_placement"},
    {DiscardReason::kAngleNotSupported, "angle_not_supported"},
    {DiscardReason::kInvalidAngle, "invalid_angle"},
    {DiscardReason::kBackendError, "backend_error"},
    {DiscardReason::kShutdown, "shutdown"},
    {DiscardReason::kShutdownUnpublished, "shutdown_unpublished"},
}};

inline const char* to_string(DiscardReason reason) {
  return name_in(kDiscardReasonNames, reason);
}

}  // namespace slicestream
