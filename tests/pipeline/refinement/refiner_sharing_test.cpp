// share_refiner_caches: slices with equal 2D problems end up with one RefinerCache, the one that
// already holds their matrix (or is busy on the worker, hence will), and others stay untouched.
#include "pipeline/refinement/refiner_sharing.hpp"

#include <gtest/gtest.h>

#include "pipeline/backend/cpu/cpu_backend.hpp"

namespace slicestream {
namespace {

RefinementSetup setup(int angles, int size) {
  return {tensorcore::make_parallel_2d(tensorcore::uniform_angles(angles, 3.14159), 16, 1.0),
          {size, size, 1.0}};
}

TEST(RefinerSharing, EqualProblemsShareTheCacheHoldingTheirMatrix) {
  const RefinementSetup a = setup(8, 8);
  const RefinementSetup b = setup(8, 10);
  std::vector<std::shared_ptr<RefinerCache>> caches;
  for (int i = 0; i < 4; ++i)
    caches.push_back(std::make_shared<RefinerCache>());
  // Slice 2 (problem a) already has a's matrix; slice 3 (problem b) one of a stale problem.
  CpuBackend backend(CpuBackendOptions{1, 0});
  caches[2]->setup = a;
  caches[2]->refiner = backend.create_refiner(a);
  caches[3]->setup = a;
  caches[3]->refiner = backend.create_refiner(a);
  const std::vector<std::shared_ptr<RefinerCache>> before = caches;
  std::vector<RefinerCacheUser> users = {
      {a, &caches[0]}, {b, &caches[1]}, {a, &caches[2]}, {b, &caches[3]}};
  share_refiner_caches(users, nullptr);
  EXPECT_EQ(caches[0], before[2]) << "the cache with the group's matrix wins";
  EXPECT_EQ(caches[2], before[2]);
  EXPECT_EQ(caches[1], before[1]) << "a stale matrix is no reason to prefer a cache";
  EXPECT_EQ(caches[3], before[1]);

  // A cache on the worker is not read; it will hold the group's matrix.
  std::vector<std::shared_ptr<RefinerCache>> fresh = {std::make_shared<RefinerCache>(),
                                                      std::make_shared<RefinerCache>()};
  const RefinerCache* busy = fresh[1].get();
  std::vector<RefinerCacheUser> pair = {{b, &fresh[0]}, {b, &fresh[1]}};
  share_refiner_caches(pair, busy);
  EXPECT_EQ(fresh[0].get(), busy);
  EXPECT_EQ(fresh[1].get(), busy);
}

}  // namespace
}  // namespace slicestream
