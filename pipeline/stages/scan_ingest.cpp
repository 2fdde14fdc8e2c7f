#include "pipeline/stages/scan_ingest.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "pipeline/stages/scan_validation.hpp"

namespace slicestream {
namespace {

constexpr std::size_t kRecentIds = 64;

bool is_valid(FrameKind kind) {
  return kind == FrameKind::kDark || kind == FrameKind::kFlat || kind == FrameKind::kProjection;
}

}  // namespace

void ScanIngest::RecentIds::add(std::uint64_t id) {
  ids_.push_back(id);
  if (ids_.size() > kRecentIds) ids_.pop_front();
}

bool ScanIngest::RecentIds::contains(std::uint64_t id) const {
  return std::find(ids_.begin(), ids_.end(), id) != ids_.end();
}

ScanIngest::ScanIngest(MetricsRegistry& metrics, EventReporter& events, Forward forward,
                       double scan_timeout_s)
    : metrics_(metrics),
      events_(events),
      forward_(std::move(forward)),
      scan_timeout_(scan_timeout_s) {}

ScanIngest::Clock::time_point ScanIngest::next_deadline() const {
  if (state_ != State::kActive || scan_timeout_.count() <= 0) return Clock::time_point::max();
  return last_data_ + std::chrono::duration_cast<Clock::duration>(scan_timeout_);
}

void ScanIngest::on_tick(Clock::time_point now) {
  if (now < next_deadline()) return;
  std::ostringstream why;
  why << "no data for " << scan_timeout_.count() << " s (--scan-timeout)";
  events_.warning("scan_timeout",
                  "scan " + std::to_string(scan_.scan_id) + ": " + why.str() + " after " +
                      std::to_string(projections_accepted_) +
                      " accepted projections; the scan ends, later frames of it are discarded",
                  scan_.scan_id);
  end_scan(why.str(), "timeout");
}

void ScanIngest::discard(DiscardReason reason, const std::string& message, std::uint64_t scan_id) {
  events_.discard(reason, message, scan_id);
}

bool ScanIngest::forward(StageItem&& item, std::uint64_t frames) {
  if (forward_(std::move(item))) return true;
  if (frames > 0) metrics_.add_discard(DiscardReason::kShutdown, frames);
  return false;
}

bool ScanIngest::forward_and_wait(StageItem&& item, std::future<Status> outcome, Status& status) {
  if (!forward_(std::move(item))) return false;
  try {
    status = outcome.get();
    return true;
  } catch (const std::future_error&) {
    return false;  // the item was dropped by a stop without drain
  }
}

std::string ScanIngest::describe(const RawFrame& frame) const {
  std::ostringstream out;
  out << to_string(frame.kind) << " " << frame.index << " of scan " << frame.scan_id;
  return out.str();
}

// ------------------------------------------------------------------------------ scan begin/end

void ScanIngest::handle(ScanBegin&& message) {
  ScanDescription& scan = message.scan;
  const std::string problem = validate_scan_description(scan);
  if (!problem.empty()) {
    rejected_.add(scan.scan_id);
    discard(DiscardReason::kInvalidScan,
            "ScanBegin of scan " + std::to_string(scan.scan_id) + " rejected: " + problem,
            scan.scan_id);
    return;
  }
  if (state_ == State::kActive) {
    end_scan("superseded by ScanBegin of scan " + std::to_string(scan.scan_id), "superseded",
             scan.scan_id);
  }
  start_scan(std::move(scan));
}

void ScanIngest::start_scan(ScanDescription&& scan) {
  const std::uint64_t id = scan.scan_id;
  ScanStartItem item;
  item.scan = scan;
  std::future<Status> outcome = item.started.get_future();
  Status status;
  if (!forward_and_wait(StageItem(std::move(item)), std::move(outcome), status)) {
    metrics_.add_discard(DiscardReason::kShutdown);
    return;
  }
  if (!status.ok()) {  // the reconstruct stage has reported the error
    rejected_.add(id);
    state_ = State::kIdle;
    return;
  }
  metrics_.scans().begin(id, metrics_.counters().scans_started.load());
  scan_ = std::move(scan);
  state_ = State::kActive;
  calibration_.reset(scan_.geometry.detector, scan_.dark_count, scan_.flat_count);
  calibration_sent_ = false;
  projections_accepted_ = 0;
  projections_seen_ = 0;
  last_data_ = Clock::now();
}

void ScanIngest::end_scan(const std::string& why, const char* end_reason,
                          std::optional<std::uint64_t> superseded_by) {
  state_ = State::kIdle;
  ended_.add(scan_.scan_id);
  metrics_.scans().ended(scan_.scan_id, end_reason, superseded_by);
  forward(StageItem(ScanEndItem{scan_.scan_id, why}), 0);
}

void ScanIngest::handle(ScanEnd&& message) {
  if (state_ != State::kActive || message.scan_id != scan_.scan_id) {
    DiscardReason reason = DiscardReason::kNoActiveScan;
    if (ended_.contains(message.scan_id)) {
      reason = DiscardReason::kScanEnded;
    } else if (rejected_.contains(message.scan_id)) {
      reason = DiscardReason::kScanRejected;
    } else if (state_ == State::kActive) {
      reason = DiscardReason::kWrongScanId;
    }
    metrics_.scans().refused(message.scan_id, to_string(reason));
    discard(reason,
            "ScanEnd of scan " + std::to_string(message.scan_id) + " ignored (" +
                (state_ == State::kActive ? "active scan is " + std::to_string(scan_.scan_id)
                                          : std::string("no scan is active")) +
                ")",
            message.scan_id);
    return;
  }
  last_data_ = Clock::now();
  if (message.frames_sent > projections_seen_) {
    const std::uint64_t missing = message.frames_sent - projections_seen_;
    events_.warning("frames_missing",
                    "scan " + std::to_string(message.scan_id) + ": the sender reports " +
                        std::to_string(message.frames_sent) + " projections, " +
                        std::to_string(projections_seen_) + " arrived (" + std::to_string(missing) +
                        " lost before the server)",
                    message.scan_id);
  }
  end_scan(
      "ScanEnd received after " + std::to_string(projections_accepted_) + " accepted projections",
      "scan_end");
}

// ------------------------------------------------------------------------------------- frames

std::string ScanIngest::frame_problem(const RawFrame& frame, DiscardReason& reason) const {
  if (state_ != State::kActive || frame.scan_id != scan_.scan_id) {
    if (ended_.contains(frame.scan_id)) {
      reason = DiscardReason::kScanEnded;
      return "the scan has ended";
    }
    if (rejected_.contains(frame.scan_id)) {
      reason = DiscardReason::kScanRejected;
      return "its ScanBegin was rejected";
    }
    if (state_ != State::kActive) {
      reason = DiscardReason::kNoActiveScan;
      return "no scan is active (a ScanBegin must come first)";
    }
    reason = DiscardReason::kWrongScanId;
    return "the active scan is " + std::to_string(scan_.scan_id);
  }
  if (!is_valid(frame.kind)) {
    reason = DiscardReason::kUnknownKind;
    return "unknown frame kind";
  }
  const DetectorShape expected = scan_.geometry.detector;
  if (frame.shape != expected || frame.pixel_type != scan_.pixel_type) {
    reason = DiscardReason::kShapeMismatch;
    std::ostringstream out;
    out << "frame is " << frame.shape.rows << " x " << frame.shape.cols << " "
        << (is_valid(frame.pixel_type) ? to_string(frame.pixel_type) : "unknown-type")
        << ", the scan " << expected.rows << " x " << expected.cols << " "
        << to_string(scan_.pixel_type);
    return out.str();
  }
  const std::size_t bytes = expected.pixels() * pixel_bytes(scan_.pixel_type);
  if (!frame.payload || frame.payload_bytes != bytes) {
    reason = DiscardReason::kBadPayloadSize;
    return "payload has " + std::to_string(frame.payload ? frame.payload_bytes : 0) +
           " bytes, expected " + std::to_string(bytes);
  }
  if (frame.kind != FrameKind::kProjection) {
    const int declared = frame.kind == FrameKind::kDark ? scan_.dark_count : scan_.flat_count;
    if (frame.index >= static_cast<std::uint32_t>(declared)) {
      reason = DiscardReason::kIndexOutOfRange;
      return "index must be below the declared count " + std::to_string(declared);
    }
    if (calibration_sent_) {
      reason = DiscardReason::kLateCalibrationFrame;
      return "calibration was already applied when the first projection arrived";
    }
    if (frame.position || frame.angle_rad) {
      reason = DiscardReason::kInvalidPlacement;
      return "darks and flats carry no position or angle";
    }
    return {};
  }
  if (frame.position && frame.angle_rad) {
    reason = DiscardReason::kInvalidPlacement;
    return "a frame carries either a position or an angle, not both";
  }
  const int n = scan_.projections_per_rotation();
  if (frame.position && *frame.position >= static_cast<std::uint32_t>(n)) {
    reason = DiscardReason::kPositionOutOfRange;
    return "position " + std::to_string(*frame.position) + " is not below the " +
           std::to_string(n) + " projections per rotation";
  }
  if (frame.angle_rad) {
    if (!scan_.circular_parallel && !scan_.circular_cone) {
      reason = DiscardReason::kAngleNotSupported;
      return "explicit angles need a circular geometry; vector scans give a position";
    }
    if (!std::isfinite(*frame.angle_rad)) {
      reason = DiscardReason::kInvalidAngle;
      return "the angle is not finite";
    }
  }
  return {};
}

void ScanIngest::handle(RawFrame&& frame) {
  metrics_.counters().bytes_received += frame.payload ? frame.payload_bytes : 0;
  const bool projection_of_scan = state_ == State::kActive && frame.scan_id == scan_.scan_id &&
                                  frame.kind == FrameKind::kProjection;
  if (projection_of_scan) ++projections_seen_;
  if (state_ == State::kActive && frame.scan_id == scan_.scan_id) last_data_ = Clock::now();
  DiscardReason reason = DiscardReason::kNoActiveScan;
  const std::string problem = frame_problem(frame, reason);
  if (!problem.empty()) {
    metrics_.scans().refused(frame.scan_id, to_string(reason));
    discard(reason, describe(frame) + " discarded: " + problem, frame.scan_id);
    return;
  }
  ++metrics_.counters().frames_received;
  metrics_.scans().accepted(frame.scan_id, frame.kind);
  if (frame.kind == FrameKind::kProjection) {
    accept_projection(std::move(frame));
  } else {
    accept_calibration_frame(std::move(frame));
  }
}

void ScanIngest::accept_calibration_frame(RawFrame&& frame) {
  ++(frame.kind == FrameKind::kDark ? metrics_.counters().darks_received
                                    : metrics_.counters().flats_received);
  const std::uint64_t non_finite = calibration_.add(frame.kind, frame.index, frame.view());
  if (non_finite > 0) {
    metrics_.counters().pixels_non_finite += non_finite;
    events_.warning(kNonFinitePixelsWarning,
                    describe(frame) + ": " + std::to_string(non_finite) +
                        " non-finite samples left out of the average",
                    frame.scan_id);
  }
  if (calibration_.complete()) send_calibration();
}

bool ScanIngest::send_calibration() {
  calibration_sent_ = true;
  const int darks = calibration_.distinct_received(FrameKind::kDark);
  const int flats = calibration_.distinct_received(FrameKind::kFlat);
  if (darks < scan_.dark_count || flats < scan_.flat_count) {
    events_.warning("incomplete_calibration",
                    "scan " + std::to_string(scan_.scan_id) + ": calibrating with " +
                        std::to_string(darks) + " of " + std::to_string(scan_.dark_count) +
                        " darks and " + std::to_string(flats) + " of " +
                        std::to_string(scan_.flat_count) + " flats",
                    scan_.scan_id);
  }
  CalibrationAccumulator::Averages averages = calibration_.average();
  if (averages.dead_pixels > 0) {
    events_.warning("dead_pixels",
                    "scan " + std::to_string(scan_.scan_id) + ": " +
                        std::to_string(averages.dead_pixels) +
                        " pixels have no finite dark/flat sample and reconstruct as 0",
                    scan_.scan_id);
  }
  CalibrationItem item;
  item.scan_id = scan_.scan_id;
  item.dark = std::move(averages.dark);
  item.flat = std::move(averages.flat);
  std::future<Status> outcome = item.applied.get_future();
  Status status;
  if (!forward_and_wait(StageItem(std::move(item)), std::move(outcome), status)) return false;
  return status.ok();  // a failure was reported by the reconstruct stage
}

void ScanIngest::accept_projection(RawFrame&& frame) {
  // A calibration that could not be applied has been reported; the frame still goes on (the
  // backend then treats raw values as transmissions).
  if (!calibration_sent_) send_calibration();
  const int n = scan_.projections_per_rotation();
  ProjectionItem item;
  item.meta = {frame.scan_id, frame.index, frame.detector_timestamp_ns, frame.arrival_ns};
  ProjectionPlacement& place = item.placement;
  if (frame.angle_rad) {
    // The window keeps the last N frames by arrival; the vector comes from the circular geometry.
    place.slot = static_cast<int>(projections_accepted_ % static_cast<std::uint64_t>(n));
    place.rotation = projections_accepted_ / static_cast<std::uint64_t>(n);
    if (scan_.circular_parallel) {
      place.vector = parallel_vector(*frame.angle_rad, scan_.circular_parallel->pixel_width_mm,
                                     scan_.circular_parallel->pixel_height_mm);
    } else {
      place.vector = cone_vector(*frame.angle_rad, *scan_.circular_cone);
    }
  } else {
    place.slot = frame.position ? static_cast<int>(*frame.position)
                                : static_cast<int>(frame.index % static_cast<std::uint32_t>(n));
    place.rotation = frame.index / static_cast<std::uint32_t>(n);
    place.vector = scan_.geometry.vectors[static_cast<std::size_t>(place.slot)];
  }
  ++projections_accepted_;
  item.raw = std::move(frame);
  forward(StageItem(std::move(item)), 1);
}

}  // namespace slicestream
