#include "pipeline/backend/cuda/cuda_buffers.hpp"

#include <utility>

namespace slicestream {

CudaProjectionPool::CudaProjectionPool(std::size_t floats, std::size_t preallocate)
    : floats_(floats) {
  free_.reserve(preallocate);
  for (std::size_t i = 0; i < preallocate; ++i) {
    free_.push_back(std::make_unique<PooledProjection>(floats_));
    ++allocated_;
  }
}

std::unique_ptr<PooledProjection> CudaProjectionPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      std::unique_ptr<PooledProjection> buffer = std::move(free_.back());
      free_.pop_back();
      return buffer;
    }
  }
  ++allocated_;
  return std::make_unique<PooledProjection>(floats_);
}

void CudaProjectionPool::release(std::unique_ptr<PooledProjection> buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(buffer));
}

CudaProjection::CudaProjection(std::shared_ptr<CudaProjectionPool> pool, std::uint64_t scan_id,
                               int cols)
    : pool_(std::move(pool)), buffer_(pool_->acquire()), scan_id_(scan_id), row_pitch_(cols) {}

CudaProjection::~CudaProjection() {
  if (buffer_) pool_->release(std::move(buffer_));
}

CudaTarget::CudaTarget(const GridSpec& grid, std::shared_ptr<std::atomic<std::size_t>> bytes_in_use,
                       cudaStream_t stream)
    : ReconTarget(grid), values_(grid.points()), bytes_in_use_(std::move(bytes_in_use)) {
  SLICESTREAM_CUDA_CHECK(cudaMemsetAsync(values_.data(), 0, values_.bytes(), stream));
  *bytes_in_use_ += values_.bytes();
}

CudaTarget::~CudaTarget() {
  *bytes_in_use_ -= values_.bytes();
}

}  // namespace slicestream
