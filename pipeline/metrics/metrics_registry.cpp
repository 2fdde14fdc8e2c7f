#include "pipeline/metrics/metrics_registry.hpp"

namespace slicestream {

const char* to_string(Stage stage) {
  switch (stage) {
    case Stage::kIngest:
      return "ingest";
    case Stage::kPreprocess:
      return "preprocess";
    case Stage::kFilter:
      return "filter";
    case Stage::kReconstruct:
      return "reconstruct";
    case Stage::kPublish:
      return "publish";
  }
  return "unknown";
}

MetricsRegistry::MetricsRegistry()
    : started_(Clock::now()),
      stages_{StageStats(to_string(Stage::kIngest)), StageStats(to_string(Stage::kPreprocess)),
              StageStats(to_string(Stage::kFilter)), StageStats(to_string(Stage::kReconstruct)),
              StageStats(to_string(Stage::kPublish))} {}

void MetricsRegistry::add_discard(const std::string& reason, std::uint64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  discards_[reason] += count;
}

void MetricsRegistry::add_frame_to_slice_latency(double latency_us) {
  std::lock_guard<std::mutex> lock(mutex_);
  frame_to_slice_.add(latency_us);
}

void MetricsRegistry::add_refinement_time(double duration_us) {
  std::lock_guard<std::mutex> lock(mutex_);
  refinement_.add(duration_us);
}

void MetricsRegistry::add_residual_check_time(double duration_us) {
  std::lock_guard<std::mutex> lock(mutex_);
  residual_check_.add(duration_us);
}

void MetricsRegistry::set_slice_residual(std::uint32_t slice_id, double residual) {
  std::lock_guard<std::mutex> lock(mutex_);
  slice_residuals_[slice_id] = residual;
}

void MetricsRegistry::forget_slice_residual(std::uint32_t slice_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  slice_residuals_.erase(slice_id);
}

void MetricsRegistry::add_request_refusal(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_refused_[reason];
}

MetricsSnapshot MetricsRegistry::snapshot() const {
  const Clock::time_point now = Clock::now();
  MetricsSnapshot s;
  s.uptime_s = std::chrono::duration<double>(now - started_).count();
  for (const StageStats& stage : stages_)
    s.stages.push_back(stage.snapshot(now));
  const PipelineCounters& c = counters_;
  s.bytes_received = c.bytes_received.load();
  s.frames_received = c.frames_received.load();
  s.darks_received = c.darks_received.load();
  s.flats_received = c.flats_received.load();
  s.projections_integrated = c.projections_integrated.load();
  s.slices_published = c.slices_published.load();
  s.publications_coalesced = c.publications_coalesced.load();
  s.publish_readback_wait_us = c.publish_readback_wait_us.load();
  s.publish_copy_us = c.publish_copy_us.load();
  s.publications_copied_out = c.publications_copied_out.load();
  s.previews_published = c.previews_published.load();
  s.publications_held_back = c.publications_held_back.load();
  s.pixels_clamped = c.pixels_clamped.load();
  s.pixels_non_finite = c.pixels_non_finite.load();
  s.store_values_clamped = c.store_values_clamped.load();
  s.scans_started = c.scans_started.load();
  s.scans_ended = c.scans_ended.load();
  s.errors = c.errors.load();
  s.recent_scans = scans_.recent();
  s.refinements_run = c.refinements_run.load();
  s.refinement_matrix_builds = c.refinement_matrix_builds.load();
  s.refined_slices_published = c.refined_slices_published.load();
  s.residual_checks_run = c.residual_checks_run.load();
  std::lock_guard<std::mutex> lock(mutex_);
  s.discards = discards_;
  s.requests_refused = requests_refused_;
  s.frame_to_slice_us = frame_to_slice_.summary();
  s.refinement_us = refinement_.summary();
  s.residual_check_us = residual_check_.summary();
  s.slice_residuals = slice_residuals_;
  return s;
}

}  // namespace slicestream
