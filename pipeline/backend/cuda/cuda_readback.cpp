#include "pipeline/backend/cuda/cuda_readback.hpp"

#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.hpp"
#include "pipeline/backend/backend.hpp"

namespace slicestream {

std::unique_ptr<PinnedStaging> PinnedStagingPool::acquire(std::size_t floats) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if ((*it)->values.size() != floats) continue;
      std::unique_ptr<PinnedStaging> staging = std::move(*it);
      idle_.erase(it);
      return staging;
    }
  }
  return std::make_unique<PinnedStaging>(floats);
}

void PinnedStagingPool::release(std::unique_ptr<PinnedStaging> staging) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (idle_.size() >= kMaxIdle) idle_.erase(idle_.begin());  // the oldest size goes first
  idle_.push_back(std::move(staging));
}

CudaReadback::CudaReadback(std::shared_ptr<PinnedStagingPool> pool, const float* device,
                           std::size_t floats, cudaStream_t stream)
    : pool_(std::move(pool)), staging_(pool_->acquire(floats)) {
  try {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(staging_->values.data(), device, floats * sizeof(float),
                                           cudaMemcpyDeviceToHost, stream));
    staging_->copied.record(stream);
  } catch (...) {
    pool_->release(std::move(staging_));
    throw;
  }
}

CudaReadback::~CudaReadback() {
  if (!staging_) return;
  // The copy must be over before another readback reuses the buffer.
  if (cudaEventSynchronize(staging_->copied.get()) == cudaSuccess) {
    pool_->release(std::move(staging_));
  }
}

void CudaReadback::wait() {
  try {
    staging_->copied.synchronize();
  } catch (const cuda::CudaError& e) {
    throw BackendError(std::string("cuda backend: slice readback: ") + e.what());
  }
}

}  // namespace slicestream
