// Where the kernels' CPU loops run. kernels/ spawns no threads of its own: a function that splits
// its work over threads takes an Executor, and the caller decides which threads do it (the CPU
// backend passes its WorkerPool, pipeline/backend/cpu/worker_pool.hpp, which tests and
// benchmarks construct too; InlineExecutor keeps everything on the calling thread).
#pragma once

#include <cstddef>
#include <functional>

namespace slicestream {

class Executor {
 public:
  using RangeBody = std::function<void(std::size_t begin, std::size_t end, int participant)>;

  virtual ~Executor() = default;

  // The most participants one parallel_for can have: the size of per-participant scratch.
  virtual int max_participants() const = 0;

  // body(begin, end, participant) over [0, count) in chunks of at most `grain` indices, every
  // index once. `participant` < max_participants() is unique among the concurrent calls of this
  // loop. Returns when every chunk is done; rethrows the first exception thrown by `body`.
  virtual void parallel_for(std::size_t count, std::size_t grain, const RangeBody& body) = 0;
};

// Runs every loop on the calling thread, as one chunk (deterministic order; no threads at all).
class InlineExecutor final : public Executor {
 public:
  int max_participants() const override { return 1; }
  void parallel_for(std::size_t count, std::size_t /*grain*/, const RangeBody& body) override {
    if (count > 0) body(0, count, 0);
  }
};

}  // namespace slicestream
