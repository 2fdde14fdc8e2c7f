// The streaming reconstruction pipeline: ingest -> preprocess -> filter -> reconstruct ->
// publish, one thread per stage connected by bounded queues (docs/architecture.md).
//
// It is driven in-process: server/ feeds decoded wire messages and commands, tests do the same.
#pragma once

#include <memory>
#include <string>

#include "pipeline/backend/backend.hpp"
#include "pipeline/messages/command.hpp"
#include "pipeline/messages/data_message.hpp"
#include "pipeline/messages/metrics_snapshot.hpp"
#include "pipeline/messages/pipeline_config.hpp"
#include "pipeline/messages/publish_sink.hpp"

namespace slicestream {

class Pipeline {
 public:
  Pipeline(const PipelineConfig& config, std::unique_ptr<Backend> backend, PublishSink& sink);
  ~Pipeline();  // stop(drain = false) if still running
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  void start();
  // Drain: finish everything accepted so far, then stop. Otherwise stop after the current items
  // and count what was left in the queues as discarded ("shutdown").
  void stop(bool drain);

  // Data path. Blocks while the ingest queue is full (back-pressure on the transport); returns
  // false only when the pipeline is stopping (the message is then counted as discarded).
  bool submit(DataMessage message);

  // Requests. The reply callback runs exactly once, on a pipeline thread; a full command queue
  // or a stopping pipeline answer kUnavailable at once.
  void submit_command(Command command, ReplyCallback on_reply);

  // A message rejected before it reached the pipeline (undecodable, oversized, ...): counted
  // under `reason`, logged, and published as an error event.
  void report_rejected(const std::string& reason, const std::string& message,
                       std::uint64_t scan_id = 0);
  // Something outside the pipeline the operator should know (e.g. a closed data connection):
  // logged and published as a warning event, rate-limited like every event.
  void report_warning(const std::string& reason, const std::string& message);

  // Blocks until every message submitted so far has been fully processed (tests, benchmarks).
  void wait_idle();

  MetricsSnapshot metrics() const;
  const Backend& backend() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace slicestream
