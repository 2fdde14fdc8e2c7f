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
  // At most this many buffers wait in the pool; more are freed when they come back.
  static constexpr std::size_t kMaxIdle = 16;

  // A buffer of exactly `floats` floats (a pooled one when there is one).
  std::unique_ptr<PinnedStaging> acquire(std::size_t floats);
  void release(std::unique_ptr<PinnedStaging> staging);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<PinnedStaging>> idle_;
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

 private:
  std::shared_ptr<PinnedStagingPool> pool_;
  std::unique_ptr<PinnedStaging> staging_;
};

}  // namespace slicestream
