// The pipeline's live counters: written lock-free (atomics) or under short locks from every
// stage thread, copied into a MetricsSnapshot by metrics() from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "pipeline/messages/discard_reason.hpp"
#include "pipeline/messages/metrics_snapshot.hpp"
#include "pipeline/metrics/latency_histogram.hpp"
#include "pipeline/metrics/scan_log.hpp"
#include "pipeline/metrics/stage_stats.hpp"

namespace slicestream {

enum class Stage { kIngest, kPreprocess, kFilter, kReconstruct, kPublish };
constexpr int kStageCount = 5;
const char* to_string(Stage stage);

struct PipelineCounters {
  std::atomic<std::uint64_t> bytes_received{0};
  std::atomic<std::uint64_t> frames_received{0};
  std::atomic<std::uint64_t> darks_received{0};
  std::atomic<std::uint64_t> flats_received{0};
  std::atomic<std::uint64_t> projections_integrated{0};
  std::atomic<std::uint64_t> slices_published{0};
  std::atomic<std::uint64_t> publications_coalesced{0};
  // The publish stage's time per kind of work, µs: waiting for readbacks (the copy queued behind
  // the GPU's work on the reconstruct stream, so GPU time shows here) and copying their values
  // out of page-locked memory (only where the readback pool had lent all it may; otherwise the
  // image keeps the readback's buffer).
  std::atomic<std::uint64_t> publish_readback_wait_us{0};
  std::atomic<std::uint64_t> publish_copy_us{0};
  std::atomic<std::uint64_t> publications_copied_out{0};
  std::atomic<std::uint64_t> previews_published{0};
  // Slice and preview publications the memory budget held back (sent later, when there is room).
  std::atomic<std::uint64_t> publications_held_back{0};
  std::atomic<std::uint64_t> pixels_clamped{0};
  std::atomic<std::uint64_t> pixels_non_finite{0};
  std::atomic<std::uint64_t> store_values_clamped{0};
  std::atomic<std::uint64_t> scans_started{0};
  std::atomic<std::uint64_t> scans_ended{0};
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> refinements_run{0};
  std::atomic<std::uint64_t> refinement_matrix_builds{0};
  std::atomic<std::uint64_t> refined_slices_published{0};
  std::atomic<std::uint64_t> residual_checks_run{0};
};

class MetricsRegistry {
 public:
  using Clock = std::chrono::steady_clock;

  MetricsRegistry();

  StageStats& stage(Stage stage) { return stages_[static_cast<std::size_t>(stage)]; }
  PipelineCounters& counters() { return counters_; }
  ScanLog& scans() { return scans_; }

  void add_discard(DiscardReason reason, std::uint64_t count = 1) {
    add_discard(to_string(reason), count);
  }
  // A discard decided outside the pipeline (Pipeline::report_rejected), under its own name.
  void add_discard(const std::string& reason, std::uint64_t count = 1);
  void add_frame_to_slice_latency(double latency_us);
  void add_refinement_time(double duration_us);
  void add_residual_check_time(double duration_us);
  // The newest data-consistency residual of a slice (a gauge); forget_ drops it.
  void set_slice_residual(std::uint32_t slice_id, double residual);
  void forget_slice_residual(std::uint32_t slice_id);
  void add_request_refusal(const std::string& reason);

  // Everything except the queue depths (the pipeline owns the queues).
  MetricsSnapshot snapshot() const;

 private:
  const Clock::time_point started_;
  std::array<StageStats, kStageCount> stages_;
  PipelineCounters counters_;
  ScanLog scans_;
  mutable std::mutex mutex_;  // discards, refusals, latencies and residuals
  std::map<std::string, std::uint64_t> discards_;
  std::map<std::string, std::uint64_t> requests_refused_;
  LatencyHistogram frame_to_slice_;
  LatencyHistogram refinement_;
  LatencyHistogram residual_check_;
  std::map<std::uint32_t, double> slice_residuals_;
};

}  // namespace slicestream
