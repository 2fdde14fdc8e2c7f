// The Backend interface's shared parts: one store update as a batch of one, and the
// distinct-slot runs that backends fuse into one pass.
#include <algorithm>
#include <utility>

#include "pipeline/backend/backend.hpp"

namespace slicestream {

void Backend::replace_projection(int slot, const ProjectionMap& map,
                                 std::unique_ptr<ProjectionBuffer> projection,
                                 const std::vector<ReconTarget*>& live,
                                 const std::vector<ReconTarget*>& accumulate, float scale) {
  std::vector<ProjectionUpdate> one(1);
  one[0].slot = slot;
  one[0].map = map;
  one[0].projection = std::move(projection);
  one[0].live = live;
  one[0].accumulate = accumulate;
  replace_projections(one, scale);
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
