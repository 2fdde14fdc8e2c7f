// Backend-owned GPU objects that travel through the pipeline: projections on their way from
// preprocess to the store (pooled device buffers, each with the event of its last use so that
// stages on different streams order themselves without blocking the host) and reconstruction
// targets (device arrays).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "pipeline/backend/backend.hpp"

namespace slicestream {

struct PooledProjection {
  explicit PooledProjection(std::size_t floats) : values(floats) {}
  cuda::DeviceBuffer<float> values;
  cuda::Event last_use;  // recorded after the last operation enqueued on `values`
};

// Device buffers for projections in flight, allocated up front (cudaMalloc synchronises the
// device, so the hot path must not call it) and grown only if the pipeline holds more.
class CudaProjectionPool {
 public:
  // Buffers of `floats` floats each: the detector's pixels, or the filter's padded rows.
  CudaProjectionPool(std::size_t floats, std::size_t preallocate);
  std::unique_ptr<PooledProjection> acquire();
  void release(std::unique_ptr<PooledProjection> buffer);
  std::size_t floats() const { return floats_; }
  std::size_t allocated() const { return allocated_.load(); }

 private:
  std::size_t floats_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<PooledProjection>> free_;
  std::atomic<std::size_t> allocated_{0};
};

// A projection in a pooled buffer: rows of `row_pitch` floats, of which the detector's columns
// are the first (the ramp filter may leave its padded rows; the store crops them).
class CudaProjection final : public ProjectionBuffer {
 public:
  // Dense rows of `cols` floats (what preprocessing writes).
  CudaProjection(std::shared_ptr<CudaProjectionPool> pool, std::uint64_t scan_id, int cols);
  ~CudaProjection() override;
  CudaProjection(const CudaProjection&) = delete;
  CudaProjection& operator=(const CudaProjection&) = delete;

  float* values() { return buffer_->values.data(); }
  cuda::Event& last_use() { return buffer_->last_use; }
  std::uint64_t scan_id() const { return scan_id_; }
  int row_pitch() const { return row_pitch_; }
  void set_row_pitch(int floats) { row_pitch_ = floats; }

 private:
  std::shared_ptr<CudaProjectionPool> pool_;
  std::unique_ptr<PooledProjection> buffer_;
  std::uint64_t scan_id_;
  int row_pitch_;
};

class CudaTarget final : public ReconTarget {
 public:
  // Zeroed on `stream` (work enqueued there later sees zeros).
  CudaTarget(const GridSpec& grid, std::shared_ptr<std::atomic<std::size_t>> bytes_in_use,
             cudaStream_t stream);
  ~CudaTarget() override;
  CudaTarget(const CudaTarget&) = delete;
  CudaTarget& operator=(const CudaTarget&) = delete;

  float* values() { return values_.data(); }
  const float* values() const { return values_.data(); }
  std::size_t bytes() const { return values_.bytes(); }

 private:
  cuda::DeviceBuffer<float> values_;
  std::shared_ptr<std::atomic<std::size_t>> bytes_in_use_;
};

}  // namespace slicestream
