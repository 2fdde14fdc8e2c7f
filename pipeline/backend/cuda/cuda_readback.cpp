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
      idle_bytes_ -= floats * sizeof(float);
      return staging;
    }
  }
  return std::make_unique<PinnedStaging>(floats);
}

void PinnedStagingPool::release(std::unique_ptr<PinnedStaging> staging) {
  const std::size_t bytes = staging->values.size() * sizeof(float);
  if (bytes > kMaxIdleBytes) return;  // freed at once
  // Freed after the lock is released (declared first, destroyed last).
  std::vector<std::unique_ptr<PinnedStaging>> freed;
  std::lock_guard<std::mutex> lock(mutex_);
  // The oldest go first.
  while (!idle_.empty() && (idle_.size() >= kMaxIdle || idle_bytes_ + bytes > kMaxIdleBytes)) {
    idle_bytes_ -= idle_.front()->values.size() * sizeof(float);
    freed.push_back(std::move(idle_.front()));
    idle_.erase(idle_.begin());
  }
  idle_bytes_ += bytes;
  idle_.push_back(std::move(staging));
}

std::size_t PinnedStagingPool::idle_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_bytes_;
}

std::size_t PinnedStagingPool::idle_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_.size();
}

bool PinnedStagingPool::try_lend(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (lent_bytes_ + bytes > max_lent_bytes_) return false;
  lent_bytes_ += bytes;
  return true;
}

void PinnedStagingPool::end_loan(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  lent_bytes_ -= bytes;
}

std::size_t PinnedStagingPool::lent_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lent_bytes_;
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
  if (lent_) pool_->end_loan(staging_->values.size() * sizeof(float));
  // The copy must be over before another readback reuses the buffer.
  if (cudaEventSynchronize(staging_->copied.get()) == cudaSuccess) {
    pool_->release(std::move(staging_));
  }
}

bool CudaReadback::lend() {
  if (lent_) return true;
  lent_ = pool_->try_lend(staging_->values.size() * sizeof(float));
  return lent_;
}

void CudaReadback::wait() {
  try {
    staging_->copied.synchronize();
  } catch (const cuda::CudaError& e) {
    throw BackendError(std::string("cuda backend: slice readback: ") + e.what());
  }
}

}  // namespace slicestream
