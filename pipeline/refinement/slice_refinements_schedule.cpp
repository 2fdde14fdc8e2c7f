// SliceRefinements: when refinements and automatic checks start, and what happens with their
// outcome (slice_refinements.hpp).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "pipeline/refinement/slice_refinements.hpp"

namespace slicestream {
namespace {

// While frames are queued, refinements take at most this share of the wall time.
constexpr double kShareUnderLoad = 0.25;
// How often the reconstruct loop looks for the outcome of a running refinement.
constexpr auto kPollInterval = std::chrono::milliseconds(5);
// A failed refinement is retried no sooner than this (or its interval, if longer).
constexpr auto kRetryDelay = std::chrono::seconds(5);
// A failed automatic check: nobody asked for it, so it retries rarely.
constexpr auto kCheckRetryDelay = std::chrono::seconds(60);
// A slice whose live image lagged its window (a build or a rotation not shown yet) is looked at
// again when the window changes, or after this long: once the scan has ended the window no
// longer changes, and the image catches up without it.
constexpr auto kLaggingRetry = std::chrono::milliseconds(50);

std::chrono::nanoseconds seconds(double s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s));
}

}  // namespace

SliceRefinements::Clock::time_point SliceRefinements::next_start(const Entry& entry) const {
  return std::max(entry.last_start + seconds(interval_s(entry)), entry.retry_after);
}

bool SliceRefinements::lagging(const Entry& entry, Clock::time_point now) {
  return now < entry.lagging_until && entry.window.version() == entry.lagging_version;
}

bool SliceRefinements::due(const Entry& entry, Clock::time_point now, bool input_waiting) const {
  if (!entry.plan || entry.in_flight || !entry.window.complete()) return false;
  const std::uint64_t version = entry.window.version();
  if (entry.submitted_any && version == entry.submitted_version) return false;  // nothing new
  if (lagging(entry, now)) return false;                                        // FBP not current
  if (now < next_start(entry)) return false;
  return !input_waiting || now >= cooldown_until_;
}

bool SliceRefinements::arm_checks(Clock::time_point now) {
  bool armed = false;
  for (auto& [id, entry] : entries_) {
    if (entry.refinement || !entry.plan || entry.capturing || entry.in_flight) continue;
    if (now < next_start(entry)) continue;
    entry.capturing = true;
    reset_window(entry);  // filled by the projections preprocessed from now on
    armed = true;
  }
  return armed;
}

void SliceRefinements::on_tick(Clock::time_point now, bool input_waiting, const ReadFbp& read_fbp,
                               const Publish& publish) {
  collect(now, publish);
  if (!scan_) return;
  if (arm_checks(now)) update_row_selection();
  if (worker_.busy()) return;
  // Refinements before automatic checks; among them, the due slice that waited longest.
  std::vector<std::tuple<bool, Clock::time_point, std::uint32_t>> candidates;
  for (const auto& [id, entry] : entries_) {
    if (due(entry, now, input_waiting)) {
      candidates.emplace_back(!entry.refinement, entry.last_start, id);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  for (const auto& [automatic, last_start, id] : candidates) {
    Entry& entry = entries_.at(id);
    SliceImage fbp;
    bool current = false;
    try {
      current = read_fbp(id, fbp);
    } catch (const std::exception& e) {
      events_.error("refinement_failed",
                    "slice " + std::to_string(id) + ": FBP image not read: " + e.what(), scan_id_);
      entry.retry_after = now + kRetryDelay;
      continue;
    }
    if (!current) {
      entry.lagging_version = entry.window.version();
      entry.lagging_until = now + kLaggingRetry;
      continue;
    }
    entry.lagging_until = {};
    start(id, entry, std::move(fbp), now);
    return;
  }
}

void SliceRefinements::start(std::uint32_t id, Entry& entry, SliceImage&& fbp,
                             Clock::time_point now) {
  RefinementJob job;
  try {
    job.setup = refinement_setup(*entry.plan, window_geometry());
  } catch (const std::invalid_argument& e) {
    entry.plan.reset();
    entry.unavailable =
        RefinementProblem{StatusCode::kFailedPrecondition, "invalid_geometry", e.what()};
    update_row_selection();
    if (entry.refinement) {
      events_.warning("refinement_unavailable", "slice " + std::to_string(id) + ": " + e.what(),
                      scan_id_);
    }
    return;
  }
  job.slice_id = id;
  job.generation = entry.generation;
  job.iterations = iterations(entry);
  job.automatic = !entry.refinement;
  job.sinogram = entry.window.values();
  if (entry.refinement) {
    job.settings = entry.refinement->settings;
    job.noise_level = open_beam_.relative_noise(job.sinogram, entry.plan->row_low,
                                                entry.plan->row_high, entry.plan->weight_high);
  }
  job.fbp = std::move(fbp);
  job.cache = entry.cache;
  busy_cache_ = entry.cache;
  entry.in_flight = true;
  entry.submitted_any = true;
  entry.submitted_version = entry.window.version();
  entry.last_start = now;
  if (job.automatic) {
    entry.capturing = false;  // until the next check is due
    update_row_selection();
  }
  worker_.submit(std::move(job));
}

void SliceRefinements::collect(Clock::time_point now, const Publish& publish) {
  std::optional<RefinementOutcome> taken = worker_.take_finished();
  if (!taken) return;
  RefinementOutcome& outcome = *taken;
  RefinementJob& job = outcome.job;
  busy_cache_.reset();
  const auto spent = seconds(outcome.duration_ms / 1000.0);
  cooldown_until_ = now + std::chrono::duration_cast<std::chrono::nanoseconds>(
                              spent * ((1 - kShareUnderLoad) / kShareUnderLoad));
  if (job.automatic) {
    metrics_.add_residual_check_time(outcome.duration_ms * 1000.0);
  } else {
    metrics_.add_refinement_time(outcome.duration_ms * 1000.0);
  }
  if (outcome.matrix_built) {
    ++metrics_.counters().refinement_matrix_builds;
    spdlog::info("slice {}: system matrix built for {} x {} pixels, {} projections ({}, {})",
                 job.slice_id, job.setup.grid.width, job.setup.grid.height,
                 job.setup.geometry.angles(), outcome.solver,
                 job.automatic ? "residual check" : "refinement");
  }
  const auto it = entries_.find(job.slice_id);
  if (it != entries_.end()) it->second.in_flight = false;
  const char* what = job.automatic ? "residual check" : "refinement";
  if (!outcome.ok) {
    if (it != entries_.end()) {
      Entry& entry = it->second;
      const auto delay = job.automatic ? kCheckRetryDelay : kRetryDelay;
      entry.retry_after = now + std::max<Clock::duration>(delay, seconds(interval_s(entry)));
      entry.failure = std::string(what) + " failed: " + outcome.error;
    }
    const std::string message = "slice " + std::to_string(job.slice_id) + ": " + outcome.error;
    if (job.automatic) {
      events_.warning("residual_check_failed", message, scan_id_);  // nothing asked was lost
    } else {
      events_.error("refinement_failed", message, scan_id_);
    }
    return;
  }
  ++(job.automatic ? metrics_.counters().residual_checks_run : metrics_.counters().refinements_run);
  if (it == entries_.end() || it->second.generation != job.generation) {
    spdlog::debug("slice {}: {} result dropped (the slice or its settings changed)", job.slice_id,
                  what);
    return;
  }
  Entry& entry = it->second;
  entry.failure.clear();
  SliceResidual& residual = entry.residual;
  residual.has_residual = true;
  residual.residual = outcome.result.residual_before;
  residual.scan_id = job.fbp.scan_id;
  residual.projections_integrated = job.fbp.projections_integrated;
  residual.window_size = job.setup.geometry.angles();
  entry.residual_at = now;
  metrics_.set_slice_residual(job.slice_id, outcome.result.residual_before);
  const RefinementSummary& summary = outcome.result.summary;
  spdlog::debug(
      "slice {}: residual {:.4g} -> {:.4g} after {} iterations of {} ({} weight {:.3g}, stop: {}, "
      "noise level {:.3g}) in {:.1f} ms ({}, {})",
      job.slice_id, outcome.result.residual_before, outcome.result.residual_after,
      outcome.result.iterations, summary.method, summary.regularizer, summary.weight,
      summary.stop_reason, summary.noise_level, outcome.duration_ms, outcome.solver, what);
  if (job.automatic) return;
  RefinementStatus& last = entry.last;
  ++last.refinements;
  last.has_result = true;
  last.projections_integrated = job.fbp.projections_integrated;
  last.fbp_residual = outcome.result.residual_before;
  last.refined_residual = outcome.result.residual_after;
  last.iterations_run = outcome.result.iterations;
  last.duration_ms = outcome.duration_ms;
  last.solver = outcome.solver;
  last.summary = outcome.result.summary;
  if (job.iterations == 0) return;  // residual only: nothing to publish
  RefinedSliceImage refined;
  refined.slice = std::move(job.fbp);
  refined.slice.sequence = ++entry.sequence;
  refined.iterations = outcome.result.iterations;
  refined.residual_before = outcome.result.residual_before;
  refined.residual_after = outcome.result.residual_after;
  refined.duration_ms = outcome.duration_ms;
  refined.summary = outcome.result.summary;
  refined.solver = outcome.solver;
  if (!publish(PublishItem(std::move(refined))))
    metrics_.add_discard(DiscardReason::kShutdownUnpublished);
}

SliceRefinements::Clock::time_point SliceRefinements::next_deadline(Clock::time_point now) const {
  if (worker_.busy()) return now + kPollInterval;
  Clock::time_point deadline = Clock::time_point::max();
  if (!scan_) return deadline;
  for (const auto& [id, entry] : entries_) {
    if (entry.plan && !entry.refinement && !entry.capturing && !entry.in_flight) {
      // An automatic check to arm.
      deadline = std::min(deadline, next_start(entry));
      continue;
    }
    if (!entry.plan || !entry.window.complete()) continue;
    const std::uint64_t version = entry.window.version();
    if (entry.submitted_any && version == entry.submitted_version) continue;
    if (lagging(entry, now)) {
      deadline = std::min(deadline, std::max(next_start(entry), entry.lagging_until));
      continue;
    }
    deadline = std::min(deadline, next_start(entry));
  }
  return std::max(deadline, now);
}

void SliceRefinements::finish(const Publish& publish) {
  worker_.wait_finished();
  collect(Clock::now(), publish);
}

}  // namespace slicestream
