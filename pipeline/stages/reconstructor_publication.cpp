// The reconstruct stage's output side: rate-limited slice publication, the progressive preview,
// flush markers, and when the loop next has something to do.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "pipeline/stages/reconstructor.hpp"

namespace slicestream {
namespace {

// While frames are queued the preview may take at most this share of the reconstruct thread.
constexpr double kPreviewShareUnderLoad = 0.25;
// The loop wakes at least this often even when nothing is due.
constexpr auto kMaxIdleWait = std::chrono::milliseconds(250);

std::chrono::nanoseconds seconds(double s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s));
}

}  // namespace

// ------------------------------------------------------------------------------ publication

SliceImage Reconstructor::live_image(std::uint32_t id, const SliceState& slice) {
  SliceImage image;
  image.slice_id = id;
  image.orientation = slice.spec.orientation;
  image.width = slice.spec.width;
  image.height = slice.spec.height;
  image.scan_id = scan_.scan_id;
  image.projections_integrated = slice.projections_integrated;
  image.newest_detector_timestamp_ns = slice.newest_timestamp_ns;
  image.newest_arrival_ns = slice.newest_arrival_ns;
  image.values.resize(slice.live->grid().points());
  backend_.read_target(*slice.live, image.values.data());
  return image;
}

bool Reconstructor::read_current_fbp(std::uint32_t id, SliceImage& image) {
  const auto it = slices_.find(id);
  if (!store_ready_ || it == slices_.end() || !it->second.live) return false;
  // Per-rotation mode shows the last completed rotation: current only right after it.
  if (it->second.projections_integrated != integrated_) return false;
  image = live_image(id, it->second);
  return true;
}

void Reconstructor::publish_slice(std::uint32_t id, SliceState& slice, Clock::time_point now) {
  SlicePublication publication;
  SliceImage& image = publication.image;
  try {
    image = live_image(id, slice);
  } catch (const std::exception& e) {
    backend_error("slice " + std::to_string(id) + " not published", e, 0);
    return;
  }
  image.sequence = ++slice.sequence;
  slice.dirty = false;
  slice.last_publish = now;
  publication.arrivals_ns = std::move(unpublished_arrivals_);
  unpublished_arrivals_.clear();
  if (!publish_(PublishItem(std::move(publication)))) {
    metrics_.add_discard("shutdown_unpublished");
  }
}

void Reconstructor::publish_due(Clock::time_point now, bool force) {
  const double rate = params_.publish_rate_hz;
  const auto period = rate > 0 ? seconds(1.0 / rate) : std::chrono::nanoseconds(0);
  for (auto& [id, slice] : slices_) {
    if (!slice.dirty || !slice.live) continue;
    if (force || rate <= 0 || now - slice.last_publish >= period) publish_slice(id, slice, now);
  }
}

void Reconstructor::run_preview(Clock::time_point now, bool input_waiting) {
  if (!preview_.enabled() || !store_ready_) return;
  if (!preview_.building()) {
    if (store_version_ == preview_version_ || integrated_ == 0) return;
    if (!preview_forced_ && now - preview_started_ < seconds(params_.preview_interval_s)) return;
    preview_.start();
    preview_started_ = now;
    preview_version_ = store_version_;
    preview_integrated_ = integrated_;
    preview_forced_ = false;
  }
  if (input_waiting && now < preview_next_unit_) return;
  const Clock::time_point begin = Clock::now();
  bool complete = false;
  try {
    complete = preview_.run_unit(scale_);
  } catch (const std::exception& e) {
    preview_.cancel();
    backend_error("preview not built", e, 0);
    return;
  }
  const Clock::time_point end = Clock::now();
  const auto spent = std::chrono::duration_cast<std::chrono::nanoseconds>(end - begin);
  preview_next_unit_ = end + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 spent * ((1 - kPreviewShareUnderLoad) / kPreviewShareUnderLoad));
  if (!complete) return;
  try {
    if (!publish_(PublishItem(preview_.take_result(scan_.scan_id, preview_integrated_)))) {
      metrics_.add_discard("shutdown_unpublished");
    }
  } catch (const std::exception& e) {
    backend_error("preview not published", e, 0);
  }
}

void Reconstructor::release_markers_if_clean() {
  if (markers_.empty()) return;
  for (const auto& [id, slice] : slices_) {
    if (slice.dirty && slice.live) return;  // wait_idle also waits for deferred publications
  }
  for (FlushMarker& marker : markers_)
    publish_(PublishItem(std::move(marker)));
  markers_.clear();
}

void Reconstructor::on_tick(Clock::time_point now, bool input_waiting) {
  publish_due(now, /*force=*/false);
  run_preview(now, input_waiting);
  refinements_.on_tick(
      now, input_waiting,
      [this](std::uint32_t id, SliceImage& image) { return read_current_fbp(id, image); },
      publish_);
  release_markers_if_clean();
}

Reconstructor::Clock::time_point Reconstructor::next_deadline(Clock::time_point now) const {
  if (preview_.building()) return now;
  Clock::time_point deadline = std::min(now + kMaxIdleWait, refinements_.next_deadline(now));
  if (preview_.enabled() && store_ready_ && store_version_ != preview_version_ && integrated_ > 0) {
    deadline = std::min(
        deadline, preview_forced_ ? now : preview_started_ + seconds(params_.preview_interval_s));
  }
  const double rate = params_.publish_rate_hz;
  for (const auto& [id, slice] : slices_) {
    if (!slice.dirty || !slice.live) continue;
    if (rate <= 0) return now;
    deadline = std::min(deadline, slice.last_publish + seconds(1.0 / rate));
  }
  return std::max(deadline, now);
}

void Reconstructor::finish() {
  refinements_.finish(publish_);
  publish_due(Clock::now(), /*force=*/true);
  release_markers_if_clean();
}

}  // namespace slicestream
