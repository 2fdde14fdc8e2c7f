// The CUDA backend's pool of page-locked readback buffers keeps at most kMaxIdle buffers and
// kMaxIdleBytes bytes idle whatever slice sizes come and go (idle pinned memory is charged to
// nothing), hands a kept buffer back for the same size, and never keeps one above the byte cap.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "pipeline/backend/cuda/cuda_backend.hpp"
#include "pipeline/backend/cuda/cuda_readback.hpp"
#include "tests/pipeline/backend/require_cuda_backend.hpp"

namespace slicestream {
namespace {

constexpr std::size_t kFloat = sizeof(float);

TEST(PinnedStagingPool, ABufferComesBackForItsOwnSize) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  PinnedStagingPool pool;
  std::unique_ptr<PinnedStaging> first = pool.acquire(1000);
  const float* address = first->values.data();
  pool.release(std::move(first));
  EXPECT_EQ(pool.idle_bytes(), 1000 * kFloat);
  std::unique_ptr<PinnedStaging> other = pool.acquire(999);
  EXPECT_NE(other->values.data(), address) << "another size gets another buffer";
  std::unique_ptr<PinnedStaging> again = pool.acquire(1000);
  EXPECT_EQ(again->values.data(), address);
  EXPECT_EQ(pool.idle_bytes(), 0u);
  EXPECT_EQ(pool.idle_count(), 0u);
}

TEST(PinnedStagingPool, IdleBytesStayWithinTheCapWhateverSizesComeBack) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  PinnedStagingPool pool;
  // Buffers of a third of the cap: at most three stay, the oldest going first.
  // (Below a third by a few floats, so that three of the sizes below fit together.)
  const std::size_t third = PinnedStagingPool::kMaxIdleBytes / 3 / kFloat - 8;
  std::vector<std::unique_ptr<PinnedStaging>> held;
  for (std::size_t k = 0; k < 5; ++k)
    held.push_back(pool.acquire(third + k));
  const float* newest = held.back()->values.data();
  for (auto& staging : held)
    pool.release(std::move(staging));
  EXPECT_LE(pool.idle_bytes(), PinnedStagingPool::kMaxIdleBytes);
  EXPECT_EQ(pool.idle_count(), 3u);
  EXPECT_EQ(pool.acquire(third + 4)->values.data(), newest) << "the newest is kept";

  // Larger than the cap: never kept.
  pool.release(pool.acquire(PinnedStagingPool::kMaxIdleBytes / kFloat + 1));
  EXPECT_LE(pool.idle_bytes(), PinnedStagingPool::kMaxIdleBytes);
  EXPECT_EQ(pool.idle_count(), 2u);

  // Many small ones: at most kMaxIdle stay.
  std::vector<std::unique_ptr<PinnedStaging>> small;
  for (std::size_t k = 0; k < PinnedStagingPool::kMaxIdle + 4; ++k)
    small.push_back(pool.acquire(256 + k));
  for (auto& staging : small)
    pool.release(std::move(staging));
  EXPECT_EQ(pool.idle_count(), PinnedStagingPool::kMaxIdle);
  EXPECT_LE(pool.idle_bytes(), PinnedStagingPool::kMaxIdleBytes);
}

}  // namespace
}  // namespace slicestream
