// The CUDA backend's asynchronous target readbacks: the copy goes into page-locked memory (a DMA
// engine reads and writes only that without blocking the host) on the reconstruct stream, after
// the work enqueued there so far, and an event marks its end. Pinned buffers are expensive to
// allocate (cudaHostAlloc synchronises the device), so they come from a pool and go back to it
// when the readback is destroyed, on whatever thread that happens.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "pipeline/backend/target_readback.hpp"

namespace slicestream {

// A pinned buffer of some size with the event of the copy into it.
struct PinnedStaging {
  explicit PinnedStaging(std::size_t floats) : values(floats) {}
  cuda::PinnedBuffer<float> values;
  cuda::Event copied;
};

class PinnedStagingPool {
 public:
  // At most this many buffers, and this many bytes, wait in the pool; the oldest are freed when
  // more come back, and a buffer larger than the byte cap is never kept. Idle page-locked memory
  // is charged to nothing, so it stays small beside the memory budget whatever slice sizes
  // clients ask for; in flight, a readback's buffer is covered by its slice's publication charge.
  static constexpr std::size_t kMaxIdle = 16;
  static constexpr std::size_t kMaxIdleBytes = std::size_t{256} << 20;

  // At most `max_lent_bytes` of its buffers are lent to published images (which viewers' queues
  // may hold for a while): page-locked memory cannot be paged out, so beyond this the publisher
  // copies the values out and the buffer comes back at once.
  explicit PinnedStagingPool(std::size_t max_lent_bytes = kDefaultReadbackLendBytes)
      : max_lent_bytes_(max_lent_bytes) {}

  // A buffer of exactly `floats` floats (a pooled one when there is one).
  std::unique_ptr<PinnedStaging> acquire(std::size_t floats);
  void release(std::unique_ptr<PinnedStaging> staging);
  std::size_t idle_bytes() const;
  std::size_t idle_count() const;
  // Counts `bytes` as lent when they fit under the pool's loan cap (false: nothing counted).
  bool try_lend(std::size_t bytes);
  void end_loan(std::size_t bytes);
  std::size_t lent_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<PinnedStaging>> idle_;
  std::size_t idle_bytes_ = 0;
  std::size_t max_lent_bytes_;
  std::size_t lent_bytes_ = 0;
};

class CudaReadback final : public TargetReadback {
 public:
  // Enqueues the copy of `bytes` from `device` on `stream`.
  CudaReadback(std::shared_ptr<PinnedStagingPool> pool, const float* device, std::size_t floats,
               cudaStream_t stream);
  ~CudaReadback() override;
  CudaReadback(const CudaReadback&) = delete;
  CudaReadback& operator=(const CudaReadback&) = delete;

  void wait() override;
  const float* values() const override { return staging_->values.data(); }
  std::size_t size() const override { return staging_->values.size(); }
  bool lend() override;

 private:
  std::shared_ptr<PinnedStagingPool> pool_;
  std::unique_ptr<PinnedStaging> staging_;
  bool lent_ = false;
};

}  // namespace slicestream
