// The periodic stats log: per-stage rate, busy fraction, service time and queue depth,
// frame -> slice latency, counters and discards (with their change since the last report).
#pragma once

#include <string>
#include <vector>

#include "pipeline/messages/metrics_snapshot.hpp"
#include "server/codec/reply_codec.hpp"

namespace slicestream {

// One line per item; `previous` (may be null) gives the deltas.
std::vector<std::string> format_stats(const MetricsSnapshot& now, const MetricsSnapshot* previous,
                                      const CounterMap& server_counters);

}  // namespace slicestream
