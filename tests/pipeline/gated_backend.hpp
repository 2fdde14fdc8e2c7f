// A CpuBackend behind a gate, for tests that need the reconstruct stage to stall: store updates
// wait until open(), so that frames pile up in the queues before it; records every batch's size;
// can lose one update with an error.
#pragma once

#include <condition_variable>
#include <mutex>
#include <vector>

#include "tests/pipeline/forwarding_backend.hpp"

namespace slicestream::test {

class GatedBackend final : public ForwardingBackend {
 public:
  int fail_update = -1;  // this update (counted from 0 over all batches) fails once

  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }
  std::vector<std::size_t> batch_sizes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return batches_;
  }

  void replace_projections(std::vector<ProjectionUpdate>& updates, float scale) override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      opened_.wait(lock, [&] { return open_; });
      batches_.push_back(updates.size());
    }
    const int first = seen_;
    seen_ += static_cast<int>(updates.size());
    if (fail_update < first || fail_update >= seen_) {
      inner_.replace_projections(updates, scale);
      return;
    }
    // The updates before the failing one take effect, it is lost, the rest are left untried.
    const auto failing = static_cast<std::size_t>(fail_update - first);
    fail_update = -1;
    for (std::size_t i = 0; i < failing; ++i)
      apply_one(updates[i], scale);
    updates[failing].projection.reset();
    throw BackendError("injected failure inside a batch");
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
  std::vector<std::size_t> batches_;
  int seen_ = 0;
};

}  // namespace slicestream::test
