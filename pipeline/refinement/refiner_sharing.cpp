#include "pipeline/refinement/refiner_sharing.hpp"

namespace slicestream {

void share_refiner_caches(std::vector<RefinerCacheUser>& users, const RefinerCache* busy) {
  std::vector<bool> grouped(users.size(), false);
  for (std::size_t first = 0; first < users.size(); ++first) {
    if (grouped[first]) continue;
    std::vector<std::size_t> group;
    for (std::size_t i = first; i < users.size(); ++i) {
      if (!grouped[i] && users[i].setup == users[first].setup) {
        grouped[i] = true;
        group.push_back(i);
      }
    }
    std::shared_ptr<RefinerCache> shared = *users[first].cache;
    for (std::size_t i : group) {
      const std::shared_ptr<RefinerCache>& cache = *users[i].cache;
      const bool ready =
          cache.get() == busy || (cache->refiner != nullptr && cache->setup == users[first].setup);
      if (ready) {
        shared = cache;
        break;
      }
    }
    for (std::size_t i : group)
      *users[i].cache = shared;
  }
}

}  // namespace slicestream
