// The reconstruct stage's output side: slice publication as the schedule says, the progressive
// preview, flush markers, and when the loop next has something to do.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "pipeline/stages/reconstructor.hpp"

namespace slicestream {
namespace {

// The loop wakes at least this often even when nothing is due.
constexpr auto kMaxIdleWait = std::chrono::milliseconds(250);
// A publication the memory budget cannot take is tried again after this long.
constexpr auto kHeldBackRetry = std::chrono::milliseconds(20);

}  // namespace

SliceImage Reconstructor::live_image(std::uint32_t id, const Slice& slice, bool values) {
  SliceImage image;
  image.slice_id = id;
  image.orientation = slice.spec.orientation;
  image.width = slice.spec.width;
  image.height = slice.spec.height;
  image.scan_id = scan_.scan_id;
  image.projections_integrated = slice.shows.projections_integrated;
  image.newest_detector_timestamp_ns = slice.shows.newest_timestamp_ns;
  image.newest_arrival_ns = slice.shows.newest_arrival_ns;
  image.filter = params_.filter;
  if (!values) return image;
  image.values.resize(slice.live->grid().points());
  backend_.read_target(*slice.live, image.values.data());
  return image;
}

bool Reconstructor::read_current_fbp(std::uint32_t id, SliceImage& image) {
  const Slice* slice = slices_.find(id);
  if (!store_ready_ || slice == nullptr || !slice->live) return false;
  // Per-rotation mode shows the last completed rotation: current only right after it.
  if (slice->shows.projections_integrated != content_.projections_integrated) return false;
  image = live_image(id, *slice);
  return true;
}

void Reconstructor::publish_slice(std::uint32_t id, Slice& slice, Clock::time_point now,
                                  bool moved) {
  // The image is charged before it is copied out; without room it waits (still dirty) until the
  // images before it have left.
  std::shared_ptr<MemoryCharge> memory = slices_.image_charge(slice);
  if (!memory) {
    schedule_.mark_dirty(id);
    schedule_.retry_at(id, now + kHeldBackRetry);
    ++metrics_.counters().publications_held_back;
    return;
  }
  // The values travel as a readback: the publish stage waits for the copy, this stage does not.
  SlicePublication publication;
  SliceImage& image = publication.image;
  try {
    image = live_image(id, slice, /*values=*/false);
    publication.readback = backend_.read_target_async(*slice.live);
  } catch (const std::exception& e) {
    backend_error("slice " + std::to_string(id) + " not published", e, 0);
    return;
  }
  image.memory = std::move(memory);
  image.moved = moved;
  image.sequence = schedule_.published(id, now);
  publication.arrivals_ns = arrivals_.take_shown();
  backlog_.queued(id);
  if (!publish_(PublishItem(std::move(publication)))) {
    backlog_.taken(id);
    metrics_.add_discard(DiscardReason::kShutdownUnpublished);
  }
}

void Reconstructor::image_changed(std::uint32_t id) {
  if (schedule_.mark_dirty(id)) ++metrics_.counters().publications_coalesced;
}

void Reconstructor::publish_due(Clock::time_point now, bool force) {
  for (std::uint32_t id : schedule_.due(now, params_.publish_rate_hz, force)) {
    Slice* slice = slices_.find(id);
    if (slice == nullptr || !slice->live) continue;
    if (!force && backlog_.hold_back(id)) {
      // Stays due: the publish stage wakes this stage when it takes one of the slice's
      // publications, and the latest values go out then.
      schedule_.held_back(id);
      continue;
    }
    publish_slice(id, *slice, now);
  }
}

void Reconstructor::run_preview(Clock::time_point now, bool input_waiting) {
  if (!preview_.enabled() || !store_ready_) return;
  if (!preview_.building()) {
    if (content_.projections_integrated == 0) return;
    if (!preview_timing_.rebuild_due(now, params_.preview_interval_s)) return;
    preview_.start();
    preview_timing_.rebuild_started(now);
    preview_integrated_ = content_.projections_integrated;
  }
  if (!background_.unit_allowed(now, input_waiting)) return;
  const Clock::time_point begin = Clock::now();
  bool complete = false;
  try {
    complete = preview_.run_unit(slices_.scale());
  } catch (const std::exception& e) {
    preview_.cancel();
    backend_error("preview not built", e, 0);
    return;
  }
  background_.unit_ran(begin, Clock::now());
  if (!complete) return;
  // Without room in the memory budget this preview is not sent (counted); the next rebuild is.
  // The volume and, while the publisher sends it, the outgoing message's copy.
  const std::size_t bytes = 2 * preview_.result_bytes();
  std::shared_ptr<MemoryCharge> memory = backend_.host_memory()->try_charge(bytes);
  if (!memory) {
    ++metrics_.counters().publications_held_back;
    return;
  }
  try {
    PreviewVolume preview = preview_.take_result(scan_.scan_id, preview_integrated_);
    preview.memory = std::move(memory);
    if (!publish_(PublishItem(std::move(preview)))) {
      metrics_.add_discard(DiscardReason::kShutdownUnpublished);
    }
  } catch (const std::exception& e) {
    backend_error("preview not published", e, 0);
  }
}

void Reconstructor::run_on_demand(Clock::time_point now, bool input_waiting) {
  if (!on_demand_.pending() || !background_.unit_allowed(now, input_waiting)) return;
  const Clock::time_point begin = Clock::now();
  on_demand_.run_unit(slices_.all_slots(), slices_.scale(), content_);
  background_.unit_ran(begin, Clock::now());
}

void Reconstructor::release_markers_if_clean() {
  if (markers_.empty()) return;
  // wait_idle also waits for deferred publications and for slices still being built.
  if (schedule_.any_dirty() || slices_.any_build()) return;
  for (FlushMarker& marker : markers_)
    publish_(PublishItem(std::move(marker)));
  markers_.clear();
}

void Reconstructor::on_tick(Clock::time_point now, bool input_waiting) {
  publish_due(now, /*force=*/false);
  // Slices a client sees go first, then GetSlice units (a client asked for them), then the
  // periodic preview.
  run_slice_build(now, input_waiting);
  run_on_demand(now, input_waiting);
  run_preview(now, input_waiting);
  refinements_.on_tick(
      now, input_waiting,
      [this](std::uint32_t id, SliceImage& image) { return read_current_fbp(id, image); },
      publish_);
  release_markers_if_clean();
}

Reconstructor::Clock::time_point Reconstructor::next_deadline(Clock::time_point now) const {
  if (preview_.building() || on_demand_.pending() || slices_.any_build()) return now;
  Clock::time_point deadline = std::min(now + kMaxIdleWait, refinements_.next_deadline(now));
  if (preview_.enabled() && store_ready_ && content_.projections_integrated > 0) {
    deadline = std::min(deadline, preview_timing_.rebuild_deadline(params_.preview_interval_s));
  }
  // A slice held back by the backlog is due already; the publish stage wakes the loop for it.
  deadline = std::min(deadline, schedule_.next_due(params_.publish_rate_hz));
  return std::max(deadline, now);
}

void Reconstructor::finish() {
  finish_slice_builds();
  while (on_demand_.pending()) {
    on_demand_.run_unit(slices_.all_slots(), slices_.scale(), content_);
  }
  refinements_.finish(publish_);
  publish_due(Clock::now(), /*force=*/true);
  release_markers_if_clean();
}

}  // namespace slicestream
