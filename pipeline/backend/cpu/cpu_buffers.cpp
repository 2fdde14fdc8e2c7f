#include "pipeline/backend/cpu/cpu_buffers.hpp"

namespace slicestream {

std::vector<float> ProjectionPool::take() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      std::vector<float> values = std::move(free_.back());
      free_.pop_back();
      return values;
    }
  }
  return std::vector<float>(pixels_);
}

void ProjectionPool::give_back(std::vector<float>&& values) {
  if (values.size() != pixels_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.size() < max_free_) free_.push_back(std::move(values));
}

CpuTarget::CpuTarget(const GridSpec& grid, std::shared_ptr<std::atomic<std::size_t>> bytes_in_use)
    : ReconTarget(grid), values(grid.points(), 0.0f), bytes_in_use_(std::move(bytes_in_use)) {
  *bytes_in_use_ += values.size() * sizeof(float);
}

CpuTarget::~CpuTarget() {
  *bytes_in_use_ -= values.size() * sizeof(float);
}

}  // namespace slicestream
