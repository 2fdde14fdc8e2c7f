#include "pipeline/backend/cpu/worker_pool.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace slicestream {
namespace {

// Shared by the caller and the helper tasks of one parallel_for; helpers that start after the
// loop finished find no chunk left and return (they keep the state alive through shared_ptr).
struct LoopState {
  LoopState(std::size_t count_, std::size_t grain_, const WorkerPool::RangeBody& body_)
      : count(count_), grain(grain_), chunks((count_ + grain_ - 1) / grain_), body(body_) {}

  const std::size_t count;
  const std::size_t grain;
  const std::size_t chunks;
  const WorkerPool::RangeBody& body;  // valid until `done == chunks` (the caller waits for it)
  std::atomic<std::size_t> next_chunk{0};
  std::atomic<int> next_participant{0};
  std::mutex mutex;
  std::condition_variable all_done;
  std::size_t done = 0;
  std::exception_ptr error;

  // Claims and runs chunks until none is left.
  void run() {
    std::size_t chunk = next_chunk.fetch_add(1);
    if (chunk >= chunks) return;
    const int participant = next_participant.fetch_add(1);
    std::size_t finished = 0;
    std::exception_ptr failure;
    for (; chunk < chunks; chunk = next_chunk.fetch_add(1)) {
      const std::size_t begin = chunk * grain;
      const std::size_t end = std::min(count, begin + grain);
      if (!failure) {
        try {
          body(begin, end, participant);
        } catch (...) {
          failure = std::current_exception();
        }
      }
      ++finished;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (failure && !error) error = failure;
    done += finished;
    if (done == chunks) all_done.notify_all();
  }
};

}  // namespace

WorkerPool::WorkerPool(int threads)
    : threads_(threads > 0 ? threads
                           : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))),
      pool_(std::make_unique<boost::asio::thread_pool>(static_cast<std::size_t>(threads_))) {}

WorkerPool::~WorkerPool() {
  pool_->join();
}

void WorkerPool::parallel_for(std::size_t count, std::size_t grain, const RangeBody& body) {
  if (count == 0) return;
  grain = std::max<std::size_t>(grain, 1);
  if (count <= grain) {
    body(0, count, 0);
    return;
  }
  auto state = std::make_shared<LoopState>(count, grain, body);
  // At most one helper per pool thread, and none beyond the chunks the caller cannot take itself.
  const std::size_t helpers =
      std::min<std::size_t>(static_cast<std::size_t>(threads_), state->chunks - 1);
  for (std::size_t i = 0; i < helpers; ++i) {
    boost::asio::post(*pool_, [state] { state->run(); });
  }
  state->run();
  std::unique_lock<std::mutex> lock(state->mutex);
  state->all_done.wait(lock, [&] { return state->done == state->chunks; });
  if (state->error) std::rethrow_exception(state->error);
}

}  // namespace slicestream
