// A point-in-time copy of the pipeline's counters, rates and latencies (GetStatus, stats log).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace slicestream {

// Histogram bounds for exposition (Prometheus): 2^k microseconds, k = 0 .. kLatencyBounds - 1
// (1 us .. 134 s). They are bucket edges of LatencyHistogram, so the counts below them are exact.
inline constexpr int kLatencyBounds = 28;

struct LatencySummary {
  std::uint64_t count = 0;
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
  double sum_us = 0;
  // count_below_us[k]: values below 2^k us (cumulative, as Prometheus buckets are).
  std::array<std::uint64_t, kLatencyBounds> count_below_us{};
};

struct StageMetrics {
  std::string name;             // "ingest", "preprocess", "filter", "reconstruct", "publish"
  std::uint64_t items = 0;      // processed since start
  double rate_per_s = 0;        // over the last stats interval
  double busy_fraction = 0;     // time spent working over the last stats interval
  LatencySummary service_us;    // time per item in this stage
  std::size_t queue_depth = 0;  // items waiting in front of the stage
  std::size_t queue_capacity = 0;
};

// One of the server's recent scans and what became of the messages that carried its id, so that
// a sender learns about its own scan and never counts another scan's frames as its own.
struct ScanRecord {
  std::uint64_t scan_id = 0;
  std::uint64_t number = 0;  // scans_started once it had started: 1 for the server's first scan
  bool ended = false;
  std::string end_reason;           // "scan_end" (its ScanEnd arrived) or "superseded"
  std::uint64_t superseded_by = 0;  // "superseded": the scan whose ScanBegin ended it
  bool reconstructed = false;       // its end went through the reconstruct stage: counts final
  std::uint64_t darks_accepted = 0;
  std::uint64_t flats_accepted = 0;
  std::uint64_t projections_accepted = 0;
  std::uint64_t projections_integrated = 0;
  std::map<std::string, std::uint64_t> discards;  // its messages refused, by reason
  double last_frame_age_s = -1;                   // since its newest accepted frame (-1: none)
  std::uint64_t frames_accepted() const {
    return darks_accepted + flats_accepted + projections_accepted;
  }
};

struct MetricsSnapshot {
  double uptime_s = 0;
  std::vector<StageMetrics> stages;
  std::uint64_t bytes_received = 0;
  std::uint64_t frames_received = 0;  // accepted into the pipeline
  std::uint64_t darks_received = 0;
  std::uint64_t flats_received = 0;
  std::uint64_t projections_integrated = 0;
  std::uint64_t slices_published = 0;
  // Slice updates never published because a newer one of the same slice replaced them while the
  // publish stage was behind (latest wins); the final state of every slice is always published.
  std::uint64_t publications_coalesced = 0;
  // The publish stage's time waiting for readbacks and copying them out, µs (metrics_registry.hpp).
  std::uint64_t publish_readback_wait_us = 0;
  std::uint64_t publish_copy_us = 0;
  // Slice publications whose values were copied out of the readback's buffer because its pool
  // had lent all the page-locked memory it may; the others keep the buffer.
  std::uint64_t publications_copied_out = 0;
  std::uint64_t previews_published = 0;
  std::uint64_t publications_held_back = 0;  // by the memory budget, sent later
  std::uint64_t memory_budget_bytes = 0;     // the host memory budget (--memory-limit-mb)
  std::uint64_t memory_used_bytes = 0;       // charged to it now
  std::uint64_t pixels_clamped = 0;          // preprocessing guards
  std::uint64_t pixels_non_finite = 0;
  std::uint64_t store_values_clamped = 0;  // filtered values beyond the store's fp16 texels
  std::uint64_t scans_started = 0;
  std::uint64_t scans_ended = 0;
  std::uint64_t errors = 0;                    // backend/stage failures
  std::uint64_t refinements_run = 0;           // slice refinements (or residual checks) completed
  std::uint64_t refinement_matrix_builds = 0;  // system matrices built for refinement
  std::uint64_t refined_slices_published = 0;
  LatencySummary refinement_us;  // wall time per refinement on the worker (matrix builds included)
  std::uint64_t residual_checks_run = 0;  // automatic data-consistency checks completed
  LatencySummary residual_check_us;       // wall time per automatic check (matrix builds included)
  // Newest data-consistency residual ||A x_fbp - b|| / ||b|| per live slice that has one
  // (automatic check or refinement); a slice that moves, goes away or meets a new scan drops it.
  std::map<std::uint32_t, double> slice_residuals;
  // Commands refused by the pipeline, by machine-readable reason (codec refusals are the
  // server's requests_rejected counter).
  std::map<std::string, std::uint64_t> requests_refused;
  std::map<std::string, std::uint64_t> discards;  // reason -> count; nothing is dropped silently
  LatencySummary frame_to_slice_us;               // frame arrival -> slice containing it published
  std::vector<ScanRecord> recent_scans;           // the last few scans, oldest first
};

}  // namespace slicestream
