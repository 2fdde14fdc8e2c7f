#include "pipeline/pipeline.hpp"

#include <spdlog/spdlog.h>

#include "pipeline/messages/overloaded.hpp"
#include "pipeline/pipeline_impl.hpp"

namespace slicestream {
namespace {

CommandReply unavailable(const std::string& message) {
  CommandReply reply;
  reply.status = Status{StatusCode::kUnavailable, message};
  return reply;
}

}  // namespace

MetricsSnapshot Pipeline::Impl::snapshot() const {
  MetricsSnapshot s = metrics.snapshot();
  const std::size_t depths[kStageCount] = {ingest_queue.size(), preprocess_queue.size(),
                                           filter_queue.size(), reconstruct_queue.size(),
                                           publish_queue.size()};
  const std::size_t capacities[kStageCount] = {
      ingest_queue.capacity(), preprocess_queue.capacity(), filter_queue.capacity(),
      reconstruct_queue.capacity(), publish_queue.capacity()};
  for (std::size_t i = 0; i < s.stages.size() && i < kStageCount; ++i) {
    s.stages[i].queue_depth = depths[i];
    s.stages[i].queue_capacity = capacities[i];
  }
  s.memory_budget_bytes = backend->host_memory()->limit_bytes();
  s.memory_used_bytes = backend->host_memory()->used_bytes();
  return s;
}

void Pipeline::Impl::internal_error(const char* stage, const std::exception& e) {
  events.error("internal_error", std::string(stage) + " stage: " + e.what(), 0);
}

void Pipeline::Impl::discard_after_backend_error(const FrameMeta& meta, const char* not_done,
                                                 const std::exception& e) {
  metrics.add_discard(DiscardReason::kBackendError);
  events.error("backend_error",
               "projection " + std::to_string(meta.index) + " " + not_done + ": " + e.what(),
               meta.scan_id);
}

// ------------------------------------------------------------------------------ shutdown

void Pipeline::Impl::count_left(IngestItem& item) {
  if (!std::holds_alternative<FlushMarker>(item)) metrics.add_discard(DiscardReason::kShutdown);
}

void Pipeline::Impl::count_left(StageItem& item) {
  std::visit(Overloaded{
                 [&](ProjectionItem&) { metrics.add_discard(DiscardReason::kShutdown); },
                 [&](ScanEndItem&) { metrics.add_discard(DiscardReason::kShutdown); },
                 [&](CommandItem& c) {
                   if (c.on_reply) c.on_reply(unavailable("the pipeline is stopping"));
                 },
                 // A ScanStart/Calibration destroyed here breaks its promise: ingest counts it.
                 [&](auto&) {},
             },
             item);
}

void Pipeline::Impl::count_left(PublishItem& item) {
  if (!std::holds_alternative<FlushMarker>(item))
    metrics.add_discard(DiscardReason::kShutdownUnpublished);
}

void Pipeline::Impl::drain_all() {
  for (IngestItem& item : ingest_queue.drain())
    count_left(item);
  for (BoundedQueue<StageItem>* queue : {&preprocess_queue, &filter_queue, &reconstruct_queue}) {
    for (StageItem& item : queue->drain())
      count_left(item);
  }
  for (PublishItem& item : publish_queue.drain())
    count_left(item);
}

// ------------------------------------------------------------------------------ Pipeline

Pipeline::Pipeline(const PipelineConfig& config, std::unique_ptr<Backend> backend,
                   PublishSink& sink) {
  if (!backend) throw std::invalid_argument("Pipeline needs a backend");
  const std::string problem = pipeline_config_problem(config);
  if (!problem.empty()) throw std::invalid_argument("pipeline config: " + problem);
  impl_ = std::make_unique<Impl>(config, std::move(backend), sink);
}

Pipeline::~Pipeline() {
  stop(/*drain=*/false);
}

void Pipeline::start() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.lifecycle);
  if (m.started || m.stopped) return;
  m.started = true;
  const BackendInfo info = m.backend->info();
  spdlog::info("pipeline started: backend {} ({}, {} threads), queue depth {}", info.name,
               info.device, info.threads, m.config.queue_depth);
  m.threads.emplace_back([&m] { m.ingest_loop(); });
  m.threads.emplace_back([&m] { m.preprocess_loop(); });
  m.threads.emplace_back([&m] { m.filter_loop(); });
  m.threads.emplace_back([&m] { m.reconstruct_loop(); });
  m.threads.emplace_back([&m] { m.publish_loop(); });
}

void Pipeline::stop(bool drain) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.lifecycle);
  if (m.stopped) return;
  m.stopped = true;
  m.accepting = false;
  if (!m.started) drain = false;  // nothing would process the queues
  if (!drain) m.aborting = true;
  m.ingest_queue.close();
  if (!drain) {
    m.preprocess_queue.close();
    m.filter_queue.close();
    m.reconstruct_queue.close();
    m.publish_queue.close();
    m.drain_all();  // breaks the promises a stage thread may be waiting on
  }
  for (std::thread& thread : m.threads)
    thread.join();
  m.threads.clear();
  m.drain_all();
  const MetricsSnapshot s = m.snapshot();
  spdlog::info(
      "pipeline stopped ({}): {} frames accepted, {} projections integrated, {} slices "
      "published",
      drain ? "drained" : "without drain", s.frames_received, s.projections_integrated,
      s.slices_published);
}

bool Pipeline::submit(DataMessage message) {
  Impl& m = *impl_;
  if (!m.accepting) {
    m.metrics.add_discard(DiscardReason::kShutdown);
    return false;
  }
  IngestItem item = std::visit(
      [](auto& body) -> IngestItem {
        if (body.arrival_ns == 0) body.arrival_ns = steady_now_ns();
        return IngestItem(std::move(body));
      },
      message);
  if (!m.ingest_queue.push(std::move(item))) {
    m.metrics.add_discard(DiscardReason::kShutdown);
    return false;
  }
  return true;
}

void Pipeline::submit_command(Command command, ReplyCallback on_reply) {
  Impl& m = *impl_;
  StageItem item(CommandItem{std::move(command), std::move(on_reply)});
  if (m.accepting && m.reconstruct_queue.try_push_priority(std::move(item))) return;
  CommandItem& refused = std::get<CommandItem>(item);
  if (!refused.on_reply) return;
  refused.on_reply(unavailable(m.accepting ? "too many requests queued; try again"
                                           : "the pipeline is stopping"));
}

void Pipeline::report_rejected(const std::string& reason, const std::string& message,
                               std::uint64_t scan_id) {
  impl_->events.reject(reason, message, scan_id);
}

void Pipeline::report_warning(const std::string& reason, const std::string& message) {
  impl_->events.warning(reason, message, 0);
}

void Pipeline::wait_idle() {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.lifecycle);
    if (!m.started || m.stopped) return;  // nothing would ever process the marker
  }
  auto promise = std::make_shared<std::promise<void>>();
  std::future<void> done = promise->get_future();
  // Only the marker holds the promise: if a shutdown destroys it, the wait ends.
  if (!m.ingest_queue.push(IngestItem(FlushMarker{std::move(promise)}))) return;
  try {
    done.get();
  } catch (const std::future_error&) {
  }
}

MetricsSnapshot Pipeline::metrics() const {
  return impl_->snapshot();
}

const Backend& Pipeline::backend() const {
  return *impl_->backend;
}

}  // namespace slicestream
