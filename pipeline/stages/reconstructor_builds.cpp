// Slices computed in units beside the frames (SetSlice or a rotation-axis change while frames
// were waiting): one unit of slots at a time within the thread share, shown once complete.
#include "pipeline/stages/reconstructor.hpp"

namespace slicestream {

bool Reconstructor::run_build_unit(std::uint32_t id, Slice& slice) {
  try {
    if (!slices_.build_unit(slice, OnDemandSlices::kUnitUpdates, content_, rotation_)) return false;
  } catch (const std::exception& e) {
    // As when a scan's targets do not fit: the slice goes, with an error event saying why.
    backend_error("slice " + std::to_string(id) + " removed", e, 0);
    schedule_.forget(id);
    refinements_.slice_removed(id);
    slices_.slices().erase(id);
    return true;
  }
  // Shown from now on.
  if (!sliding() && scan_running_) start_shadow(id, slice);
  image_changed(id);
  publish_due(Clock::now(), /*force=*/false);
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
