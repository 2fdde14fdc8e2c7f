// The five stage threads of the pipeline: each pops its queue, does its work, pushes on.
#include <spdlog/spdlog.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "kernels/thread_name.hpp"
#include "pipeline/messages/overloaded.hpp"
#include "pipeline/pipeline_impl.hpp"

namespace slicestream {
namespace {

using Clock = std::chrono::steady_clock;

// Projections whose guard counts the preprocess stage reads back at once (one wait on the
// backend per batch instead of per frame).
constexpr std::size_t kPreprocessCountsBatch = 8;

// How often the publish stage looks for suppressed-event summaries when idle.
constexpr auto kPublishIdleWait = std::chrono::milliseconds(200);

std::uint64_t microseconds(Clock::duration duration) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(duration).count());
}

// The selected rows of a preprocessed projection, one read_rows call per run of adjacent rows.
CapturedRows capture_rows(Backend& backend, ProjectionBuffer& buffer, const std::vector<int>& rows,
                          DetectorShape detector) {
  CapturedRows captured;
  for (int row : rows) {
    if (row >= 0 && row < detector.rows) captured.rows.push_back(row);
  }
  const std::size_t cols = static_cast<std::size_t>(detector.cols);
  captured.values.resize(captured.rows.size() * cols);
  for (std::size_t begin = 0; begin < captured.rows.size();) {
    std::size_t end = begin + 1;
    while (end < captured.rows.size() && captured.rows[end] == captured.rows[end - 1] + 1)
      ++end;
    backend.read_rows(buffer, captured.rows[begin], static_cast<int>(end - begin),
                      captured.values.data() + begin * cols);
    begin = end;
  }
  return captured;
}

}  // namespace

void Pipeline::Impl::ingest_loop() {
  name_this_thread("ss-ingest");
  StageStats& stats = metrics.stage(Stage::kIngest);
  while (true) {
    // Wakes for the scan timeout too; an item that is there is handled before the timeout is
    // looked at, so data waiting in the queue always counts.
    std::optional<IngestItem> item = ingest_queue.pop_until(ingest.next_deadline());
    if (item) {
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
    } else if (ingest_queue.exhausted()) {
      break;
    }
    try {
      ingest.on_tick(Clock::now());
    } catch (const std::exception& e) {
      internal_error("ingest", e);
    }
  }
  preprocess_queue.close();
}

void Pipeline::Impl::report_preprocess_counts(std::deque<FrameMeta>& uncounted) {
  if (uncounted.empty()) return;
  std::vector<PreprocessCounters> counts;
  try {
    counts = backend->take_preprocess_counts();
  } catch (const std::exception& e) {
    events.error("backend_error",
                 std::to_string(uncounted.size()) +
                     " projections: guarded-pixel counts not read: " + e.what(),
                 uncounted.front().scan_id);
  }
  // One entry per projection in order; an entry without its projection (never expected) is
  // still counted.
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const PreprocessCounters& c = counts[k];
    metrics.counters().pixels_clamped += c.clamped_low;
    metrics.counters().pixels_non_finite += c.non_finite;
    if (c.non_finite == 0) continue;
    const FrameMeta* meta = k < uncounted.size() ? &uncounted[k] : nullptr;
    const std::string which = meta != nullptr ? "projection " + std::to_string(meta->index) +
                                                    " of scan " + std::to_string(meta->scan_id)
                                              : std::string("a projection");
    events.warning(kNonFinitePixelsWarning,
                   which + ": " + std::to_string(c.non_finite) +
                       " non-finite pixels zeroed, the rest integrated",
                   meta != nullptr ? meta->scan_id : 0);
  }
  uncounted.clear();
}

void Pipeline::Impl::preprocess_loop() {
  name_this_thread("ss-preprocess");
  StageStats& stats = metrics.stage(Stage::kPreprocess);
  // Projections preprocessed whose guard counts are not read yet, oldest first. They are read
  // once per kPreprocessCountsBatch projections, when the queue runs dry, and before any other
  // item goes on (a flush then finds every count in the metrics).
  std::deque<FrameMeta> uncounted;
  while (std::optional<StageItem> item = preprocess_queue.pop()) {
    if (aborting) {
      count_left(*item);
      break;
    }
    if (auto* projection = std::get_if<ProjectionItem>(&*item)) {
      stats.begin_item(Clock::now());
      try {
        projection->buffer =
            backend->preprocess(projection->raw.view(), projection->placement.vector);
      } catch (const std::exception& e) {
        discard_after_backend_error(projection->meta, "not preprocessed", e);
        stats.end_item(Clock::now());
        continue;
      }
      uncounted.push_back(projection->meta);
      const std::vector<int> rows = row_selection.rows();
      if (!rows.empty()) {
        try {
          projection->captured =
              capture_rows(*backend, *projection->buffer, rows, projection->raw.shape);
        } catch (const std::exception& e) {
          // The frame is still integrated; refinement treats its slot as missing.
          projection->captured = CapturedRows{};
          events.error("backend_error",
                       "projection " + std::to_string(projection->meta.index) +
                           ": rows for slice refinement not read: " + e.what(),
                       projection->meta.scan_id);
        }
      }
      projection->raw = RawFrame{};  // the transport buffer can go
      stats.end_item(Clock::now());
    } else {
      report_preprocess_counts(uncounted);
    }
    if (!filter_queue.push(std::move(*item))) count_left(*item);
    if (uncounted.size() >= kPreprocessCountsBatch || preprocess_queue.empty()) {
      report_preprocess_counts(uncounted);
    }
  }
  report_preprocess_counts(uncounted);
  filter_queue.close();
}

void Pipeline::Impl::filter_loop() {
  name_this_thread("ss-filter");
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
        discard_after_backend_error(projection->meta, "not filtered", e);
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
  name_this_thread("ss-reconstruct");
  StageStats& stats = metrics.stage(Stage::kReconstruct);
  // A batch is the projection popped and those already waiting behind it, at most
  // max_projection_batch; the Reconstructor ends it earlier at a rotation boundary or a completed
  // shadow, and the backend's update plan fuses it into runs of distinct slots.
  const auto max_batch = static_cast<std::size_t>(config.max_projection_batch);
  std::optional<StageItem> held;  // popped while gathering a batch; handled next
  std::vector<ProjectionItem> batch;
  while (!aborting) {
    std::optional<StageItem> item;
    if (held) {
      item = std::move(held);
      held.reset();
    } else {
      item = reconstruct_queue.pop_until(reconstructor->next_deadline(Clock::now()));
    }
    if (item) {
      if (aborting) {
        count_left(*item);
        break;
      }
      stats.begin_item(Clock::now());
      std::uint64_t handled = 1;
      try {
        auto* projection = std::get_if<ProjectionItem>(&*item);
        if (projection != nullptr && max_batch > 1) {
          // Projections already waiting join this one (a command or any other item ends the
          // batch and is handled next, in queue order).
          batch.clear();
          batch.push_back(std::move(*projection));
          while (batch.size() < max_batch) {
            std::optional<StageItem> next = reconstruct_queue.try_pop();
            if (!next) break;
            if (auto* more = std::get_if<ProjectionItem>(&*next)) {
              batch.push_back(std::move(*more));
            } else {
              held = std::move(next);
              break;
            }
          }
          handled = batch.size();
          reconstructor->handle_projections(batch);
        } else {
          reconstructor->handle(std::move(*item));
        }
      } catch (const std::exception& e) {
        internal_error("reconstruct", e);
      }
      stats.end_item(Clock::now(), handled);
    } else if (reconstruct_queue.exhausted()) {
      break;
    }
    if (aborting) break;
    try {
      reconstructor->on_tick(Clock::now(), held.has_value() || !reconstruct_queue.empty());
    } catch (const std::exception& e) {
      internal_error("reconstruct", e);
    }
  }
  if (held) count_left(*held);
  if (!aborting) {
    try {
      reconstructor->finish();
    } catch (const std::exception& e) {
      internal_error("reconstruct", e);
    }
  }
  publish_queue.close();
}

bool Pipeline::Impl::push_publication(PublishItem&& item) {
  if (auto* publication = std::get_if<SlicePublication>(&item)) {
    publication->order = ++publications_queued;
    if (publication->image.moved && publish_queue.try_push_priority(std::move(item))) return true;
  }
  return publish_queue.push(std::move(item));
}

void Pipeline::Impl::take_readback_values(SlicePublication& p) {
  const Clock::time_point start = Clock::now();
  p.readback->wait();
  const Clock::time_point arrived = Clock::now();
  metrics.counters().publish_readback_wait_us += microseconds(arrived - start);
  if (p.readback->lend()) {
    // The image's values stay in the readback's buffer, which goes back to its pool when the
    // last holder of the image (a viewer's queue, the WebSocket hub) lets go.
    std::shared_ptr<const TargetReadback> owner(std::move(p.readback));
    p.image.values = SliceValues::shared(owner, owner->values(), owner->size());
    return;
  }
  // The pool has lent all it may: the values are copied out and the buffer goes back now.
  p.image.values.assign(p.readback->values(), p.readback->values() + p.readback->size());
  p.readback.reset();
  ++metrics.counters().publications_copied_out;
  metrics.counters().publish_copy_us += microseconds(Clock::now() - arrived);
}

void Pipeline::Impl::publish_slice(SlicePublication& p) {
  // The reconstruct stage may hold the slice's latest update back until now.
  if (publication_backlog.taken(p.image.slice_id)) reconstruct_queue.wake();
  if (superseded.superseded(p)) {
    if (p.readback) p.readback->wait();  // the copy into its buffer ends before the buffer goes
    ++metrics.counters().publications_coalesced;
    return;
  }
  if (p.readback) take_readback_values(p);
  sink.publish_shared_slice(std::make_shared<const SliceImage>(std::move(p.image)));
  ++metrics.counters().slices_published;
  const std::uint64_t now_ns = steady_now_ns();
  for (std::uint64_t arrival_ns : p.arrivals_ns) {
    if (arrival_ns == 0 || arrival_ns > now_ns) continue;
    metrics.add_frame_to_slice_latency(static_cast<double>(now_ns - arrival_ns) / 1000.0);
  }
}

void Pipeline::Impl::publish(PublishItem& item) {
  std::visit(Overloaded{
                 [&](SlicePublication& p) { publish_slice(p); },
                 [&](PreviewVolume& p) {
                   sink.publish_preview(p);
                   ++metrics.counters().previews_published;
                 },
                 [&](ServerEvent& e) { sink.publish_event(e); },
                 [&](FlushMarker& m) { m.done->set_value(); },
                 [&](RefinedSliceImage& r) {
                   r.slice.values.share();  // the sinks keep copies: of the handle, not the floats
                   sink.publish_refined(r);
                   ++metrics.counters().refined_slices_published;
                 },
             },
             item);
}

void Pipeline::Impl::publish_loop() {
  name_this_thread("ss-publish");
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

}  // namespace slicestream
