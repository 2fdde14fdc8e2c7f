#include "pipeline/metrics/event_reporter.hpp"

#include <spdlog/spdlog.h>

#include <utility>

namespace slicestream {

EventReporter::EventReporter(MetricsRegistry& metrics, Publish publish)
    : metrics_(metrics), publish_(std::move(publish)) {}

void EventReporter::discard(DiscardReason reason, const std::string& message, std::uint64_t scan_id,
                            std::uint64_t count, EventKind kind) {
  metrics_.add_discard(reason, count);
  report(kind, to_string(reason), message, scan_id);
}

void EventReporter::reject(const std::string& reason, const std::string& message,
                           std::uint64_t scan_id) {
  metrics_.add_discard(reason);
  report(EventKind::kError, reason, message, scan_id);
}

void EventReporter::error(const std::string& reason, const std::string& message,
                          std::uint64_t scan_id) {
  ++metrics_.counters().errors;
  report(EventKind::kError, reason, message, scan_id);
}

void EventReporter::warning(const std::string& reason, const std::string& message,
                            std::uint64_t scan_id) {
  report(EventKind::kWarning, reason, message, scan_id);
}

void EventReporter::scan_event(EventKind kind, std::uint64_t scan_id, const std::string& message,
                               std::optional<StartedScan> started) {
  spdlog::info("scan {}: {}", scan_id, message);
  emit(ServerEvent{kind, scan_id, std::string(), message, std::move(started)});
}

void EventReporter::report(EventKind kind, const std::string& reason, const std::string& message,
                           std::uint64_t scan_id) {
  const Clock::time_point now = Clock::now();
  std::uint64_t carried = 0;  // suppressed in the previous window, announced with this one
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Limiter& limiter = limiters_[std::string(to_string(kind)) + "/" + reason];
    limiter.last_scan_id = scan_id;
    if (now - limiter.window_begin >= kWindow) {
      carried = limiter.suppressed;
      limiter = Limiter{now, 0, 0, scan_id};
    }
    if (limiter.emitted >= kMaxPerWindow) {
      ++limiter.suppressed;
      return;
    }
    ++limiter.emitted;
  }
  std::string text = message;
  if (carried > 0) text += " (" + std::to_string(carried) + " similar events suppressed before)";
  if (kind == EventKind::kError) {
    spdlog::error("[{}] {}", reason, text);
  } else {
    spdlog::warn("[{}] {}", reason, text);
  }
  emit(ServerEvent{kind, scan_id, reason, std::move(text)});
}

std::vector<ServerEvent> EventReporter::take_summaries(Clock::time_point now) {
  std::vector<ServerEvent> summaries;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [key, limiter] : limiters_) {
      if (limiter.suppressed == 0 || now - limiter.window_begin < kWindow) continue;
      const std::size_t slash = key.find('/');
      const std::string kind_name = key.substr(0, slash);
      const EventKind kind =
          kind_name == to_string(EventKind::kWarning) ? EventKind::kWarning : EventKind::kError;
      const std::string reason = key.substr(slash + 1);
      summaries.push_back(ServerEvent{
          kind, limiter.last_scan_id, reason,
          std::to_string(limiter.suppressed) + " similar '" + reason +
              "' events suppressed in the last second (all are counted in the metrics)"});
      limiter = Limiter{now, 1, 0, limiter.last_scan_id};
    }
  }
  for (const ServerEvent& event : summaries)
    spdlog::warn("[{}] {}", event.reason, event.message);
  return summaries;
}

void EventReporter::emit(ServerEvent&& event) {
  if (publish_ && !publish_(std::move(event))) {
    metrics_.add_discard(DiscardReason::kShutdownUnpublished);
  }
}

}  // namespace slicestream
