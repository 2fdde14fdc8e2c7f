// Host-memory buffers of the CPU backend: projections (recycled through a pool so that a running
// scan allocates nothing per frame) and reconstruction targets (counted against the memory limit).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "pipeline/backend/backend.hpp"

namespace slicestream {

// Free projection arrays of one detector size. Buffers return here when their owner dies.
class ProjectionPool : public std::enable_shared_from_this<ProjectionPool> {
 public:
  ProjectionPool(std::size_t pixels, std::size_t max_free) : pixels_(pixels), max_free_(max_free) {}
  std::size_t pixels() const { return pixels_; }
  std::vector<float> take();
  void give_back(std::vector<float>&& values);

 private:
  const std::size_t pixels_;
  const std::size_t max_free_;
  std::mutex mutex_;
  std::vector<std::vector<float>> free_;
};

class CpuProjection final : public ProjectionBuffer {
 public:
  explicit CpuProjection(std::shared_ptr<ProjectionPool> pool)
      : values(pool->take()), pool_(std::move(pool)) {}
  ~CpuProjection() override { pool_->give_back(std::move(values)); }
  CpuProjection(const CpuProjection&) = delete;
  CpuProjection& operator=(const CpuProjection&) = delete;

  std::vector<float> values;  // rows x cols, row-major

 private:
  std::shared_ptr<ProjectionPool> pool_;
};

class CpuTarget final : public ReconTarget {
 public:
  // `bytes_in_use` is the backend's running total of target memory (this target adds itself).
  CpuTarget(const GridSpec& grid, std::shared_ptr<std::atomic<std::size_t>> bytes_in_use);
  ~CpuTarget() override;
  CpuTarget(const CpuTarget&) = delete;
  CpuTarget& operator=(const CpuTarget&) = delete;

  std::vector<float> values;  // grid().points(), i fastest, then j, then k

 private:
  std::shared_ptr<std::atomic<std::size_t>> bytes_in_use_;
};

}  // namespace slicestream
