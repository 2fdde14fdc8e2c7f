// Turns discards, errors and scan transitions into counters, log lines and ServerEvents.
//
// Identical events (same kind and reason) are rate-limited to kMaxPerWindow per second; the
// suppressed ones are still counted and announced by one summary event ("... N similar events
// suppressed") so that a flood of bad frames cannot flood the viewers or the log.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "pipeline/messages/publish_sink.hpp"
#include "pipeline/metrics/metrics_registry.hpp"

namespace slicestream {

// The warning about NaN/inf pixels that the preprocessing guards zeroed or left out of a dark/flat
// average; the pixels are counted in PipelineCounters::pixels_non_finite (not as discards: the
// frame is used).
inline constexpr const char* kNonFinitePixelsWarning = "non_finite_pixels";

// The warning about filtered values beyond the range of the store's texels (fp16: +-65504),
// clamped to it; counted in PipelineCounters::store_values_clamped.
inline constexpr const char* kStoreValuesClampedWarning = "store_values_clamped";

class EventReporter {
 public:
  using Clock = std::chrono::steady_clock;
  // Hands an event to the publish stage; false when it can no longer be published (shutdown).
  using Publish = std::function<bool(ServerEvent&&)>;

  static constexpr int kMaxPerWindow = 5;
  static constexpr std::chrono::milliseconds kWindow{1000};

  EventReporter(MetricsRegistry& metrics, Publish publish);

  // Input that was not used (or pixels that were zeroed): counted under metrics.discards[reason].
  void discard(DiscardReason reason, const std::string& message, std::uint64_t scan_id,
               std::uint64_t count = 1, EventKind kind = EventKind::kError);
  // Input rejected before it reached the pipeline (the server's codecs): counted and reported
  // under the rejecter's `reason`.
  void reject(const std::string& reason, const std::string& message, std::uint64_t scan_id);
  // A failure of a stage or the backend: counted under metrics.errors.
  void error(const std::string& reason, const std::string& message, std::uint64_t scan_id);
  // Something the operator should know that loses nothing (incomplete calibration, ...).
  void warning(const std::string& reason, const std::string& message, std::uint64_t scan_id);
  // Scan started/ended: never rate-limited.
  void scan_event(EventKind kind, std::uint64_t scan_id, const std::string& message,
                  std::optional<StartedScan> started = std::nullopt);

  // Summaries of suppressed events whose window has passed (logged here). The publish stage
  // hands them to the sink itself: it must never push into its own queue.
  std::vector<ServerEvent> take_summaries(Clock::time_point now);

 private:
  struct Limiter {
    Clock::time_point window_begin{};
    int emitted = 0;
    std::uint64_t suppressed = 0;
    std::uint64_t last_scan_id = 0;
  };

  // Logs and publishes `event` unless its limiter suppresses it.
  void report(EventKind kind, const std::string& reason, const std::string& message,
              std::uint64_t scan_id);
  void emit(ServerEvent&& event);

  MetricsRegistry& metrics_;
  Publish publish_;
  std::mutex mutex_;
  std::map<std::string, Limiter> limiters_;  // key: kind + "/" + reason
};

}  // namespace slicestream
