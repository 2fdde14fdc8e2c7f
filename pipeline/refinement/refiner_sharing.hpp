// One system matrix per distinct 2D problem: slices whose RefinementSetups are equal (the same
// grid and the same projections in their own frames, e.g. axial slices at different heights of a
// parallel-beam scan with the same in-plane frame) share one RefinerCache, so the refinement
// worker builds their matrix once and every refinement or residual check of any of them reuses
// it. Decided on the reconstruct thread whenever the slices are re-planned.
#pragma once

#include <memory>
#include <vector>

#include "pipeline/refinement/refinement_worker.hpp"

namespace slicestream {

struct RefinerCacheUser {
  RefinementSetup setup;                 // the slice's 2D problem now
  std::shared_ptr<RefinerCache>* cache;  // the slice's cache pointer, replaced when shared
};

// Points every group of users with equal setups at one cache: the first of theirs that holds the
// group's matrix (or is `busy`, the cache of the job the worker runs, which it must not be read
// from here), else the first user's. Other caches are left to their owners.
void share_refiner_caches(std::vector<RefinerCacheUser>& users, const RefinerCache* busy);

}  // namespace slicestream
