// The CUDA backend's pool of page-locked readback buffers keeps at most kMaxIdle buffers and
// kMaxIdleBytes bytes idle whatever slice sizes come and go (idle pinned memory is charged to
// nothing), hands a kept buffer back for the same size, and never keeps one above the byte cap.
// A readback lends its buffer to a published image within the pool's loan cap, and the buffer
// comes back to the pool, its loan ended, when the last holder lets go.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/device_buffer.hpp"

#include "pipeline/backend/cuda/cuda_backend.hpp"
#include "pipeline/backend/cuda/cuda_readback.hpp"
#include "tests/kernels/test_support.hpp"
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

TEST(PinnedStagingPool, LoansStayWithinTheirCap) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  const std::size_t mib = std::size_t{1} << 20;
  PinnedStagingPool pool(3 * mib);
  EXPECT_TRUE(pool.try_lend(mib));
  EXPECT_TRUE(pool.try_lend(2 * mib));
  EXPECT_FALSE(pool.try_lend(1)) << "the cap is reached";
  EXPECT_EQ(pool.lent_bytes(), 3 * mib) << "a refused loan counts nothing";
  pool.end_loan(mib);
  EXPECT_TRUE(pool.try_lend(mib));
  pool.end_loan(mib);
  pool.end_loan(2 * mib);
  EXPECT_EQ(pool.lent_bytes(), 0u);
}

std::vector<float> random_floats(std::size_t count) {
  static test::RandomSource random;
  return random.floats(count, -2.0, 9.0);
}

TEST(CudaReadback, ALentBufferHoldsTheValuesUntilItsLastHolderLetsGo) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  const std::vector<float> host = random_floats(100003);
  cuda::DeviceBuffer<float> device(host);
  cuda::Stream stream;
  auto pool = std::make_shared<PinnedStagingPool>();
  auto readback = std::make_unique<CudaReadback>(pool, device.data(), host.size(), stream.get());
  readback->wait();
  ASSERT_TRUE(readback->lend());
  EXPECT_EQ(pool->lent_bytes(), host.size() * kFloat);
  // The publish stage's hand-over: the readback becomes the owner of the image's values.
  std::shared_ptr<const TargetReadback> owner(std::move(readback));
  const float* values = owner->values();
  std::shared_ptr<const TargetReadback> viewer = owner;  // a viewer's queue holding the image
  owner.reset();
  EXPECT_EQ(std::vector<float>(values, values + host.size()), host);
  EXPECT_EQ(pool->idle_count(), 0u) << "still lent";
  viewer.reset();
  EXPECT_EQ(pool->lent_bytes(), 0u);
  EXPECT_EQ(pool->idle_count(), 1u) << "the buffer is back for the next readback";
  CudaReadback next(pool, device.data(), host.size(), stream.get());
  EXPECT_EQ(next.values(), values) << "and the next readback of that size gets it";
}

TEST(CudaReadback, BeyondTheLoanCapTheBufferIsNotLent) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  const std::vector<float> host = random_floats(4096);
  cuda::DeviceBuffer<float> device(host);
  cuda::Stream stream;
  auto pool = std::make_shared<PinnedStagingPool>(host.size() * kFloat + 1);
  CudaReadback first(pool, device.data(), host.size(), stream.get());
  CudaReadback second(pool, device.data(), host.size(), stream.get());
  first.wait();
  second.wait();
  EXPECT_TRUE(first.lend());
  EXPECT_TRUE(first.lend()) << "asking again counts nothing more";
  EXPECT_FALSE(second.lend()) << "two buffers do not fit the cap";
  EXPECT_EQ(pool->lent_bytes(), host.size() * kFloat);
  EXPECT_EQ(std::vector<float>(second.values(), second.values() + host.size()), host);
}

}  // namespace
}  // namespace slicestream
