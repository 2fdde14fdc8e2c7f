#include "server/stats_report.hpp"

#include <fmt/format.h>

namespace slicestream {

namespace {

std::string latency_ms(const LatencySummary& latency) {
  if (latency.count == 0) return "n/a";
  return fmt::format("p50 {:.2f} ms p99 {:.2f} ms max {:.2f} ms", latency.p50_us / 1000,
                     latency.p99_us / 1000, latency.max_us / 1000);
}

std::uint64_t delta(std::uint64_t now, const MetricsSnapshot* previous,
                    std::uint64_t MetricsSnapshot::*field) {
  return previous ? now - previous->*field : now;
}

}  // namespace

std::vector<std::string> format_stats(const MetricsSnapshot& now, const MetricsSnapshot* previous,
                                      const CounterMap& server_counters) {
  std::vector<std::string> lines;
  if (previous && now.frames_received == previous->frames_received &&
      now.slices_published == previous->slices_published &&
      now.previews_published == previous->previews_published &&
      now.refinements_run == previous->refinements_run &&
      now.residual_checks_run == previous->residual_checks_run &&
      now.discards == previous->discards && now.errors == previous->errors) {
    lines.push_back(
        fmt::format("idle: {} frames, {} projections integrated, {} slices published "
                    "so far; nothing new since the last report",
                    now.frames_received, now.projections_integrated, now.slices_published));
    return lines;
  }
  lines.push_back(fmt::format(
      "frames {} (+{}) | projections integrated {} (+{}) | slices published {} (+{}, "
      "{} coalesced) | previews {} | scans {} started {} ended | errors {}",
      now.frames_received, delta(now.frames_received, previous, &MetricsSnapshot::frames_received),
      now.projections_integrated,
      delta(now.projections_integrated, previous, &MetricsSnapshot::projections_integrated),
      now.slices_published,
      delta(now.slices_published, previous, &MetricsSnapshot::slices_published),
      now.publications_coalesced, now.previews_published, now.scans_started, now.scans_ended,
      now.errors));
  lines.push_back(fmt::format("frame -> slice latency: {} (n={})",
                              latency_ms(now.frame_to_slice_us), now.frame_to_slice_us.count));
  for (const StageMetrics& stage : now.stages) {
    lines.push_back(fmt::format("  {:<11} {:>8.1f}/s busy {:>5.1f}% service {} queue {}/{}",
                                stage.name, stage.rate_per_s, 100 * stage.busy_fraction,
                                latency_ms(stage.service_us), stage.queue_depth,
                                stage.queue_capacity));
  }
  if (!now.discards.empty()) {
    std::string text = "discards:";
    for (const auto& [reason, count] : now.discards) {
      std::uint64_t before = 0;
      if (previous) {
        auto it = previous->discards.find(reason);
        if (it != previous->discards.end()) before = it->second;
      }
      text += fmt::format(" {}={} (+{})", reason, count, count - before);
    }
    lines.push_back(text);
  }
  if (now.refinements_run > 0) {
    lines.push_back(fmt::format(
        "refinements {} (+{}), {} refined slices published, {} matrices built, time {}",
        now.refinements_run,
        delta(now.refinements_run, previous, &MetricsSnapshot::refinements_run),
        now.refined_slices_published, now.refinement_matrix_builds, latency_ms(now.refinement_us)));
  }
  if (!now.slice_residuals.empty()) {
    std::string text = fmt::format("data consistency ||A x_fbp - b|| / ||b|| ({} checks, time {}):",
                                   now.residual_checks_run, latency_ms(now.residual_check_us));
    for (const auto& [slice_id, residual] : now.slice_residuals)
      text += fmt::format(" slice {} {:.4g}", slice_id, residual);
    lines.push_back(text);
  }
  if (now.pixels_clamped > 0 || now.pixels_non_finite > 0) {
    lines.push_back(fmt::format("preprocessing guards: {} pixels clamped, {} non-finite",
                                now.pixels_clamped, now.pixels_non_finite));
  }
  if (now.store_values_clamped > 0) {
    lines.push_back(fmt::format("store: {} filtered values clamped to the fp16 texels' range",
                                now.store_values_clamped));
  }
  std::string endpoints = "endpoints:";
  for (const auto& [name, count] : server_counters)
    endpoints += fmt::format(" {}={}", name, count);
  lines.push_back(endpoints);
  return lines;
}

std::vector<std::string> StatsLog::report(const MetricsSnapshot& now,
                                          const CounterMap& server_counters) {
  std::vector<std::string> lines =
      format_stats(now, previous_ ? &*previous_ : nullptr, server_counters);
  previous_ = now;
  const bool idle = lines.size() == 1 && lines[0].rfind("idle", 0) == 0;
  if (!idle) {
    idle_logged_at_s_.reset();
    return lines;
  }
  if (idle_logged_at_s_ && now.uptime_s - *idle_logged_at_s_ < idle_heartbeat_s_) return {};
  idle_logged_at_s_ = now.uptime_s;
  lines[0] += fmt::format(" (logged again in {:g} s unless something happens)", idle_heartbeat_s_);
  return lines;
}

}  // namespace slicestream
