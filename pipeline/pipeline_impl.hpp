// Pipeline's internals, shared by pipeline.cpp (construction, lifecycle, shutdown accounting,
// the public API) and pipeline_stages.cpp (the five stage loops). Private to pipeline/.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/steady_clock.hpp"
#include "pipeline/bounded_queue.hpp"
#include "pipeline/messages/stage_items.hpp"
#include "pipeline/metrics/event_reporter.hpp"
#include "pipeline/metrics/metrics_registry.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/refinement/detector_row_selection.hpp"
#include "pipeline/stages/reconstructor.hpp"
#include "pipeline/stages/scan_ingest.hpp"
#include "pipeline/superseded_publications.hpp"

namespace slicestream {

// Commands overtake queued frames through the reconstruct queue's priority lane.
constexpr std::size_t kCommandQueueCapacity = 64;
// Moved slices' images overtake routine publications through the publish queue's priority lane
// (a full lane: the image queues as any other).
constexpr std::size_t kMovedSliceLaneCapacity = 8;

struct Pipeline::Impl {
  Impl(const PipelineConfig& config_, std::unique_ptr<Backend> backend_, PublishSink& sink_)
      : config(config_),
        backend(std::move(backend_)),
        sink(sink_),
        ingest_queue(static_cast<std::size_t>(config.queue_depth)),
        preprocess_queue(static_cast<std::size_t>(config.queue_depth)),
        filter_queue(static_cast<std::size_t>(config.queue_depth)),
        reconstruct_queue(static_cast<std::size_t>(config.queue_depth), kCommandQueueCapacity),
        publish_queue(static_cast<std::size_t>(config.queue_depth), kMovedSliceLaneCapacity),
        events(metrics,
               [this](ServerEvent&& event) {
                 return publish_queue.push(PublishItem(std::move(event)));
               }),
        ingest(
            metrics, events,
            [this](StageItem&& item) {
              // Back-pressure waits are not ingest's service time.
              const auto begin = std::chrono::steady_clock::now();
              const bool pushed = preprocess_queue.push(std::move(item));
              metrics.stage(Stage::kIngest).exclude_wait(std::chrono::steady_clock::now() - begin);
              return pushed;
            },
            config.scan_timeout_s),
        reconstructor(std::make_unique<Reconstructor>(
            config, *backend, metrics, events, row_selection,
            [this](PublishItem&& item) {
              const auto begin = std::chrono::steady_clock::now();
              const bool pushed = push_publication(std::move(item));
              metrics.stage(Stage::kReconstruct)
                  .exclude_wait(std::chrono::steady_clock::now() - begin);
              return pushed;
            },
            publication_backlog, [this] { return snapshot(); },
            [this] {
              return reconstruct_queue.any_of([](const StageItem& item) {
                return std::holds_alternative<ProjectionItem>(item);
              });
            })) {}

  // Declaration order is destruction order in reverse: queues (holding backend buffers) and the
  // reconstructor (holding targets) go before the backend.
  const PipelineConfig config;
  std::unique_ptr<Backend> backend;
  PublishSink& sink;
  MetricsRegistry metrics;
  BoundedQueue<IngestItem> ingest_queue;
  BoundedQueue<StageItem> preprocess_queue;
  BoundedQueue<StageItem> filter_queue;
  BoundedQueue<StageItem> reconstruct_queue;
  BoundedQueue<PublishItem> publish_queue;
  EventReporter events;
  DetectorRowSelection row_selection;  // reconstruct stage -> preprocess stage
  // Reconstruct stage <-> publish stage. Slice publications may fill half the publish queue; the
  // rest is for previews, refined slices, events and forced publications.
  PublicationBacklog publication_backlog{
      static_cast<std::size_t>(std::max(1, config.queue_depth / 2))};
  ScanIngest ingest;
  std::unique_ptr<Reconstructor> reconstructor;
  std::uint64_t publications_queued = 0;  // reconstruct stage: SlicePublication::order
  SupersededPublications superseded;      // publish stage

  std::mutex lifecycle;
  bool started = false;
  bool stopped = false;
  std::atomic<bool> accepting{true};
  std::atomic<bool> aborting{false};
  std::vector<std::thread> threads;

  MetricsSnapshot snapshot() const;
  void ingest_loop();
  void preprocess_loop();
  // Reads the backend's guard counts of the `uncounted` projections into the metrics and events.
  void report_preprocess_counts(std::deque<FrameMeta>& uncounted);
  void filter_loop();
  void reconstruct_loop();
  // Reconstruct stage -> publish queue: numbers slice publications; a moved slice's image
  // takes the priority lane.
  bool push_publication(PublishItem&& item);
  void publish_loop();
  void publish(PublishItem& item);
  void publish_slice(SlicePublication& publication);
  void take_readback_values(SlicePublication& publication);
  void internal_error(const char* stage, const std::exception& e);
  // A projection the backend failed on (`not_done`: "not filtered"): counted as a discard and
  // reported as an error event of its scan.
  void discard_after_backend_error(const FrameMeta& meta, const char* not_done,
                                   const std::exception& e);

  // Shutdown accounting of what a stop without drain leaves behind.
  void count_left(IngestItem& item);
  void count_left(StageItem& item);
  void count_left(PublishItem& item);
  void drain_all();
};

}  // namespace slicestream
