#include "pipeline/pipeline.hpp"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "pipeline/bounded_queue.hpp"
#include "pipeline/event_reporter.hpp"
#include "pipeline/metrics_registry.hpp"
#include "pipeline/reconstructor.hpp"
#include "pipeline/scan_ingest.hpp"
#include "pipeline/stage_items.hpp"

namespace slicestream {
namespace {

using Clock = std::chrono::steady_clock;

// Commands overtake queued frames through the reconstruct queue's priority lane.
constexpr std::size_t kCommandQueueCapacity = 64;
// How often the publish stage looks for suppressed-event summaries when idle.
constexpr auto kPublishIdleWait = std::chrono::milliseconds(200);

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

std::uint64_t steady_now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

void name_thread(const char* name) {
  pthread_setname_np(pthread_self(), name);
}

CommandReply unavailable(const std::string& message) {
  CommandReply reply;
  reply.status = Status{StatusCode::kUnavailable, message};
  return reply;
}

}  // namespace

struct Pipeline::Impl {
  Impl(const PipelineConfig& config_, std::unique_ptr<Backend> backend_, PublishSink& sink_)
      : config(config_),
        backend(std::move(backend_)),
        sink(sink_),
        ingest_queue(static_cast<std::size_t>(config.queue_depth)),
        preprocess_queue(static_cast<std::size_t>(config.queue_depth)),
        filter_queue(static_cast<std::size_t>(config.queue_depth)),
        reconstruct_queue(static_cast<std::size_t>(config.queue_depth), kCommandQueueCapacity),
        publish_queue(static_cast<std::size_t>(config.queue_depth)),
        events(metrics,
               [this](ServerEvent&& event) {
                 return publish_queue.push(PublishItem(std::move(event)));
               }),
        ingest(metrics, events,
               [this](StageItem&& item) { return preprocess_queue.push(std::move(item)); }),
        reconstructor(std::make_unique<Reconstructor>(
            config, *backend, metrics, events,
            [this](PublishItem&& item) { return publish_queue.push(std::move(item)); },
            [this] { return snapshot(); })) {}

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
  ScanIngest ingest;
  std::unique_ptr<Reconstructor> reconstructor;

  std::mutex lifecycle;
  bool started = false;
  bool stopped = false;
  std::atomic<bool> accepting{true};
  std::atomic<bool> aborting{false};
  std::vector<std::thread> threads;

  MetricsSnapshot snapshot() const;
  void ingest_loop();
  void preprocess_loop();
  void filter_loop();
  void reconstruct_loop();
  void publish_loop();
  void publish(PublishItem& item);
  void internal_error(const char* stage, const std::exception& e);

  // Shutdown accounting of what a stop without drain leaves behind.
  void count_left(IngestItem& item);
  void count_left(StageItem& item);
  void count_left(PublishItem& item);
  void drain_all();
};

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
  return s;
}

void Pipeline::Impl::internal_error(const char* stage, const std::exception& e) {
  events.error("internal_error", std::string(stage) + " stage: " + e.what(), 0);
}

// ------------------------------------------------------------------------------ stage loops

void Pipeline::Impl::ingest_loop() {
  name_thread("ss-ingest");
  StageStats& stats = metrics.stage(Stage::kIngest);
  while (std::optional<IngestItem> item = ingest_queue.pop()) {
    if (aborting) {
      count_left(*item);
      break;
    }
    stats.begin_item(Clock::now());
    try {
      std::visit(Overloaded{
                     [&](ScanBegin& m) { ingest.handle(std::move(m)); },
                     [&](RawFrame& m) { ingest.handle(std::move(m)); },
                     [&](ScanEnd& m) { ingest.handle(std::move(m)); },
                     [&](FlushMarker& m) { preprocess_queue.push(StageItem(std::move(m))); },
                 },
                 *item);
    } catch (const std::exception& e) {
      internal_error("ingest", e);
    }
    stats.end_item(Clock::now());
  }
  preprocess_queue.close();
}

void Pipeline::Impl::preprocess_loop() {
  name_thread("ss-preprocess");
  StageStats& stats = metrics.stage(Stage::kPreprocess);
  while (std::optional<StageItem> item = preprocess_queue.pop()) {
    if (aborting) {
      count_left(*item);
      break;
    }
    if (auto* projection = std::get_if<ProjectionItem>(&*item)) {
      stats.begin_item(Clock::now());
      PreprocessCounters counters;
      try {
        projection->buffer =
            backend->preprocess(projection->raw.view(), projection->placement.vector, &counters);
      } catch (const std::exception& e) {
        metrics.add_discard("backend_error");
        events.error("backend_error",
                     "projection " + std::to_string(projection->meta.index) +
                         " not preprocessed: " + e.what(),
                     projection->meta.scan_id);
        stats.end_item(Clock::now());
        continue;
      }
      projection->raw = RawFrame{};  // the transport buffer can go
      metrics.counters().pixels_clamped += counters.clamped_low;
      metrics.counters().pixels_non_finite += counters.non_finite;
      if (counters.non_finite > 0) {
        events.discard("non_finite_pixels",
                       "projection " + std::to_string(projection->meta.index) + " of scan " +
                           std::to_string(projection->meta.scan_id) + ": " +
                           std::to_string(counters.non_finite) +
                           " non-finite pixels zeroed, the rest integrated",
                       projection->meta.scan_id, counters.non_finite, EventKind::kWarning);
      }
      stats.end_item(Clock::now());
    }
    if (!filter_queue.push(std::move(*item))) count_left(*item);
  }
  filter_queue.close();
}

void Pipeline::Impl::filter_loop() {
  name_thread("ss-filter");
  StageStats& stats = metrics.stage(Stage::kFilter);
  while (std::optional<StageItem> item = filter_queue.pop()) {
    if (aborting) {
      count_left(*item);
      break;
    }
    if (auto* projection = std::get_if<ProjectionItem>(&*item)) {
      stats.begin_item(Clock::now());
      try {
        backend->filter(*projection->buffer);
      } catch (const std::exception& e) {
        metrics.add_discard("backend_error");
        events.error(
            "backend_error",
            "projection " + std::to_string(projection->meta.index) + " not filtered: " + e.what(),
            projection->meta.scan_id);
        stats.end_item(Clock::now());
        continue;
      }
      stats.end_item(Clock::now());
    }
    if (!reconstruct_queue.push(std::move(*item))) count_left(*item);
  }
  reconstruct_queue.close();
}

void Pipeline::Impl::reconstruct_loop() {
  name_thread("ss-reconstruct");
  StageStats& stats = metrics.stage(Stage::kReconstruct);
  while (!aborting) {
    std::optional<StageItem> item =
        reconstruct_queue.pop_until(reconstructor->next_deadline(Clock::now()));
    if (item) {
      if (aborting) {
        count_left(*item);
        break;
      }
      stats.begin_item(Clock::now());
      try {
        reconstructor->handle(std::move(*item));
      } catch (const std::exception& e) {
        internal_error("reconstruct", e);
      }
      stats.end_item(Clock::now());
    } else if (reconstruct_queue.exhausted()) {
      break;
    }
    if (aborting) break;
    try {
      reconstructor->on_tick(Clock::now(), !reconstruct_queue.empty());
    } catch (const std::exception& e) {
      internal_error("reconstruct", e);
    }
  }
  if (!aborting) {
    try {
      reconstructor->finish();
    } catch (const std::exception& e) {
      internal_error("reconstruct", e);
    }
  }
  publish_queue.close();
}

void Pipeline::Impl::publish(PublishItem& item) {
  std::visit(
      Overloaded{
          [&](SlicePublication& p) {
            sink.publish_slice(p.image);
            ++metrics.counters().slices_published;
            const std::uint64_t now_ns = steady_now_ns();
            for (std::uint64_t arrival_ns : p.arrivals_ns) {
              if (arrival_ns == 0 || arrival_ns > now_ns) continue;
              metrics.add_frame_to_slice_latency(static_cast<double>(now_ns - arrival_ns) / 1000.0);
            }
          },
          [&](PreviewVolume& p) {
            sink.publish_preview(p);
            ++metrics.counters().previews_published;
          },
          [&](ServerEvent& e) { sink.publish_event(e); },
          [&](FlushMarker& m) { m.done->set_value(); },
      },
      item);
}

void Pipeline::Impl::publish_loop() {
  name_thread("ss-publish");
  StageStats& stats = metrics.stage(Stage::kPublish);
  while (true) {
    std::optional<PublishItem> item = publish_queue.pop_until(Clock::now() + kPublishIdleWait);
    if (item && aborting) {
      count_left(*item);
      break;
    }
    // Summaries of rate-limited events go straight to the sink (never into our own queue).
    for (ServerEvent& summary : events.take_summaries(Clock::now())) {
      try {
        sink.publish_event(summary);
      } catch (const std::exception& e) {
        ++metrics.counters().errors;
        spdlog::error("publish stage: the sink failed: {}", e.what());
      }
    }
    if (!item) {
      if (publish_queue.exhausted()) break;
      continue;
    }
    stats.begin_item(Clock::now());
    try {
      publish(*item);
    } catch (const std::exception& e) {
      ++metrics.counters().errors;
      spdlog::error("publish stage: the sink failed: {}", e.what());
    }
    stats.end_item(Clock::now());
  }
}

// ------------------------------------------------------------------------------ shutdown

void Pipeline::Impl::count_left(IngestItem& item) {
  if (!std::holds_alternative<FlushMarker>(item)) metrics.add_discard("shutdown");
}

void Pipeline::Impl::count_left(StageItem& item) {
  std::visit(Overloaded{
                 [&](ProjectionItem&) { metrics.add_discard("shutdown"); },
                 [&](ScanEndItem&) { metrics.add_discard("shutdown"); },
                 [&](CommandItem& c) {
                   if (c.on_reply) c.on_reply(unavailable("the pipeline is stopping"));
                 },
                 // A ScanStart/Calibration destroyed here breaks its promise: ingest counts it.
                 [&](auto&) {},
             },
             item);
}

void Pipeline::Impl::count_left(PublishItem& item) {
  if (!std::holds_alternative<FlushMarker>(item)) metrics.add_discard("shutdown_unpublished");
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
    m.metrics.add_discard("shutdown");
    return false;
  }
  IngestItem item = std::visit(
      [](auto& body) -> IngestItem {
        if (body.arrival_ns == 0) body.arrival_ns = steady_now_ns();
        return IngestItem(std::move(body));
      },
      message);
  if (!m.ingest_queue.push(std::move(item))) {
    m.metrics.add_discard("shutdown");
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
  impl_->events.discard(reason, message, scan_id);
}

void Pipeline::wait_idle() {
  Impl& m = *impl_;
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
