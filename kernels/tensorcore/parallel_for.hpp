// A minimal work-sharing loop for the CPU builders and references: body(index) for index in
// [0, count) on up to `threads` std::threads (0: all hardware threads), handing out indices one at
// a time so that uneven work (projections at different angles) balances itself. The first
// exception thrown by a body is rethrown to the caller after all threads have stopped.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace slicestream::tensorcore {

inline int worker_count(int threads = 0) {
  if (threads > 0) return threads;
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(hardware);
}

// body(index, worker) where worker in [0, worker_count(threads)) identifies per-thread scratch.
template <class Body>
void parallel_for(long long count, Body&& body, int threads = 0) {
  const int workers = static_cast<int>(std::min<long long>(worker_count(threads), count));
  if (workers <= 1) {
    for (long long i = 0; i < count; ++i)
      body(i, 0);
    return;
  }
  std::atomic<long long> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto run = [&](int worker) {
    try {
      for (long long i = next++; i < count; i = next++)
        body(i, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = count;
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(workers - 1));
  for (int w = 1; w < workers; ++w)
    pool.emplace_back(run, w);
  run(0);
  for (std::thread& t : pool)
    t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace slicestream::tensorcore
