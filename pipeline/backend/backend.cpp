// The Backend interface's shared part: one store update as a batch of one, a readback that copies
// at once.
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

std::unique_ptr<TargetReadback> Backend::read_target_async(const ReconTarget& target) {
  std::vector<float> values(target.grid().points());
  read_target(target, values.data());
  return std::make_unique<HostReadback>(std::move(values));
}

}  // namespace slicestream
