// The periodic stats log: per-stage rate, busy fraction, service time and queue depth,
// frame -> slice latency, counters and discards (with their change since the last report).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pipeline/messages/metrics_snapshot.hpp"
#include "server/codec/reply_codec.hpp"

namespace slicestream {

// One line per item; `previous` (may be null) gives the deltas.
std::vector<std::string> format_stats(const MetricsSnapshot& now, const MetricsSnapshot* previous,
                                      const CounterMap& server_counters);

// The periodic stats log over time: the full report while something happens; once nothing has
// changed, one "idle" line and then only a heartbeat every `idle_heartbeat_s` (a line every few
// seconds would bury everything else, a silent log would look like a hung server).
class StatsLog {
 public:
  explicit StatsLog(double idle_heartbeat_s = 600) : idle_heartbeat_s_(idle_heartbeat_s) {}
  // The lines to log now (none while idle between heartbeats); times from `now.uptime_s`.
  std::vector<std::string> report(const MetricsSnapshot& now, const CounterMap& server_counters);

 private:
  double idle_heartbeat_s_;
  std::optional<MetricsSnapshot> previous_;
  std::optional<double> idle_logged_at_s_;  // uptime of the last idle line while idle
};

}  // namespace slicestream
