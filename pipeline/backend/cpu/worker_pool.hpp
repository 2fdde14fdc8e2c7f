// The CPU backend's worker threads (one boost::asio::thread_pool shared by every stage) and a
// small parallel_for over index ranges.
//
// The calling thread takes part in its own loop: it claims chunks like the pool's workers do, so
// a stage never waits for pool threads that are busy with another stage's work; the pool only adds
// helpers when it has idle threads.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace boost::asio {
class thread_pool;
}

namespace slicestream {

class WorkerPool {
 public:
  // threads <= 0: std::thread::hardware_concurrency().
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return threads_; }
  // The most participants one parallel_for can have (pool threads plus the caller): size of
  // per-participant scratch arrays.
  int max_participants() const { return threads_ + 1; }

  // body(begin, end, participant) over [0, count) in chunks of at most `grain` indices.
  // `participant` < max_participants() is unique among the concurrent calls of this loop.
  // Returns when every chunk is done; rethrows the first exception thrown by `body`.
  using RangeBody = std::function<void(std::size_t begin, std::size_t end, int participant)>;
  void parallel_for(std::size_t count, std::size_t grain, const RangeBody& body);

 private:
  int threads_;
  std::unique_ptr<boost::asio::thread_pool> pool_;
};

}  // namespace slicestream
