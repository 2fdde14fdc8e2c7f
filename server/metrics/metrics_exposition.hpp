// The server's /metrics page: every counter, gauge and histogram of the pipeline (from a
// GetStatus report), of the endpoints and of the process, in the Prometheus text format.
// docs/metrics.md lists the families.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "pipeline/messages/command.hpp"
#include "server/codec/reply_codec.hpp"
#include "server/metrics/http_counters.hpp"
#include "server/metrics/process_stats.hpp"
#include "server/metrics/request_counters.hpp"

namespace slicestream {

struct HttpCounterValues {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_refused = 0;
  std::int64_t connections_open = 0;
  std::int64_t websocket_sessions = 0;
  std::uint64_t websocket_frames_sent = 0;
  std::uint64_t websocket_bytes_sent = 0;
  std::uint64_t websocket_updates_superseded = 0;
  std::uint64_t websocket_events_dropped = 0;
  std::uint64_t websocket_updates_over_budget = 0;
  std::uint64_t websocket_messages_refused = 0;
  std::map<std::pair<std::string, unsigned>, std::uint64_t> responses;
};
HttpCounterValues snapshot(const HttpCounters& counters);

struct MetricsInputs {
  // The pipeline's status; absent when it did not answer in time (the page then says so in
  // slicestream_status_available and leaves the pipeline's families out).
  std::optional<StatusReport> status;
  CounterMap server_counters;  // the ZeroMQ endpoints' (ServerCounters)
  std::map<RequestCountKey, std::uint64_t> requests;
  HttpCounterValues http;
  std::optional<ProcessStats> process;
};

std::string format_metrics(const MetricsInputs& inputs);

}  // namespace slicestream
