// Slices computed from the store after a SetSlice, a ResetSlices or a rotation-axis change: at once
// when that is quick and no frame waits, else in units of slots beside the frames, within the
// thread share, shown once complete.
#include <limits>

#include "pipeline/stages/reconstructor.hpp"

namespace slicestream {
namespace {

// A recompute whose first unit says the rest takes at most this long is finished at once (the
// CUDA backend's launches return before the device has run them: there, it always is).
constexpr double kAtOnceS = 0.025;

}  // namespace

bool Reconstructor::compute_slice(Slice& slice) {
  slices_.start_build(slice);
  if (frames_waiting()) return false;
  const Clock::time_point begin = Clock::now();
  bool live = slices_.build_unit(slice, OnDemandSlices::kUnitUpdates, content_, rotation_);
  if (!live) {
    const double unit_s = std::chrono::duration<double>(Clock::now() - begin).count();
    const double rest_s = unit_s * static_cast<double>(slices_.window() - slice.built_slots) /
                          static_cast<double>(std::max(slice.built_slots, 1));
    if (rest_s > kAtOnceS) return false;
    live = slices_.build_unit(slice, std::numeric_limits<std::size_t>::max(), content_, rotation_);
  }
  if (!sliding() && scan_running_) slices_.start_shadow(slice);
  return live;
}

void Reconstructor::remove_failed_slice(std::uint32_t id, const std::exception& e) {
  // As when a scan's targets do not fit: the slice goes, with an error event saying why.
  backend_error("slice " + std::to_string(id) + " removed", e, 0);
  schedule_.forget(id);
  refinements_.slice_removed(id);
  slices_.slices().erase(id);
}

bool Reconstructor::run_build_unit(std::uint32_t id, Slice& slice) {
  try {
    if (!slices_.build_unit(slice, OnDemandSlices::kUnitUpdates, content_, rotation_)) return false;
  } catch (const std::exception& e) {
    remove_failed_slice(id, e);
    return true;
  }
  // Shown from now on, first in the publish queue like a slice moved at once.
  if (!sliding() && scan_running_) start_shadow(id, slice);
  publish_slice(id, slice, Clock::now(), /*moved=*/true);
  return true;
}

void Reconstructor::run_slice_build(Clock::time_point now, bool input_waiting) {
  const auto [id, slice] = slices_.next_build();
  if (slice == nullptr || !background_.unit_allowed(now, input_waiting)) return;
  const Clock::time_point begin = Clock::now();
  run_build_unit(id, *slice);
  background_.unit_ran(begin, Clock::now());
}

void Reconstructor::finish_slice_builds() {
  for (auto next = slices_.next_build(); next.second != nullptr; next = slices_.next_build()) {
    while (!run_build_unit(next.first, *next.second)) {
    }
  }
}

}  // namespace slicestream
