// The Backend interface's shared parts: the one-by-one batch and the distinct-slot runs that
// fusing backends process in one pass.
#include <algorithm>
#include <utility>

#include "pipeline/backend.hpp"

namespace slicestream {

void Backend::replace_projections(std::vector<ProjectionUpdate>& updates, float scale) {
  for (ProjectionUpdate& update : updates) {
    replace_projection(update.slot, update.map, std::move(update.projection), update.live,
                       update.accumulate, scale);
    update.applied = true;
  }
}

std::size_t distinct_slot_run(const std::vector<ProjectionUpdate>& updates, std::size_t begin,
                              std::size_t limit) {
  std::size_t end = begin;
  while (end < updates.size() && end - begin < std::max<std::size_t>(limit, 1)) {
    const int slot = updates[end].slot;
    const bool repeated = std::any_of(updates.begin() + static_cast<std::ptrdiff_t>(begin),
                                      updates.begin() + static_cast<std::ptrdiff_t>(end),
                                      [slot](const ProjectionUpdate& u) { return u.slot == slot; });
    if (repeated) break;
    ++end;
  }
  return end - begin;
}

}  // namespace slicestream
