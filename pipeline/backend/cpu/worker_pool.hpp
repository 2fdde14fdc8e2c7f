// The project's thread pool (one boost::asio::thread_pool) and its parallel_for over index
// ranges, as the kernels' Executor (kernels/executor.hpp): the CPU backend's workers, shared by
// every stage and the slice refiners; tests and benchmarks construct one to hand the kernels.
//
// The calling thread takes part in its own loop: it claims chunks like the pool's workers do, so
// a stage never waits for pool threads that are busy with another stage's work; the pool only adds
// helpers when it has idle threads.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/executor.hpp"

namespace boost::asio {
class thread_pool;
}

namespace slicestream {

class WorkerPool final : public Executor {
 public:
  // threads <= 0: std::thread::hardware_concurrency().
  explicit WorkerPool(int threads);
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return threads_; }
  // Pool threads plus the caller.
  int max_participants() const override { return threads_ + 1; }
  // Executor::parallel_for; a loop of one chunk runs on the caller alone.
  void parallel_for(std::size_t count, std::size_t grain, const RangeBody& body) override;

 private:
  int threads_;
  std::unique_ptr<boost::asio::thread_pool> pool_;
};

}  // namespace slicestream
