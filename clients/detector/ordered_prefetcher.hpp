// Produces items 0, 1, 2, ... on worker threads ahead of a consumer that takes them in order:
// the simulator renders (noise, dynamic phantom) and the replayer reads files while earlier
// frames are being sent. At most `lookahead` items are in flight, which bounds memory.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace slicestream::detector {

template <typename T>
class OrderedPrefetcher {
 public:
  using Producer = std::function<T(std::uint64_t)>;

  OrderedPrefetcher(std::uint64_t count, int workers, std::uint64_t lookahead, Producer producer)
      : count_(count), lookahead_(lookahead < 1 ? 1 : lookahead), producer_(std::move(producer)) {
    const int thread_count = workers < 1 ? 1 : workers;
    for (int i = 0; i < thread_count; ++i)
      threads_.emplace_back([this] { work(); });
  }

  OrderedPrefetcher(const OrderedPrefetcher&) = delete;
  OrderedPrefetcher& operator=(const OrderedPrefetcher&) = delete;

  ~OrderedPrefetcher() {
    cancel();
    for (std::thread& thread : threads_)
      thread.join();
  }

  // The next item in order; nullopt after the last one or after cancel(). Rethrows the
  // producer's exception for the item that failed.
  std::optional<T> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (next_to_take_ >= count_) return std::nullopt;
    ready_changed_.wait(lock, [this] {
      return cancelled_ || ready_.count(next_to_take_) > 0 || failures_.count(next_to_take_) > 0;
    });
    if (cancelled_) return std::nullopt;
    if (auto failure = failures_.find(next_to_take_); failure != failures_.end()) {
      std::exception_ptr error = failure->second;
      cancelled_ = true;  // nothing after a failed item is delivered
      claim_allowed_.notify_all();
      std::rethrow_exception(error);
    }
    const auto ready = ready_.find(next_to_take_);
    std::optional<T> item(std::move(ready->second));
    ready_.erase(ready);
    ++next_to_take_;
    claim_allowed_.notify_all();
    return item;
  }

  void cancel() {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    claim_allowed_.notify_all();
    ready_changed_.notify_all();
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      claim_allowed_.wait(lock, [this] {
        return cancelled_ || next_to_claim_ >= count_ ||
               next_to_claim_ < next_to_take_ + lookahead_;
      });
      if (cancelled_ || next_to_claim_ >= count_) return;
      const std::uint64_t index = next_to_claim_++;
      lock.unlock();
      std::optional<T> item;
      std::exception_ptr error;
      try {
        item.emplace(producer_(index));
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error) {
        failures_.emplace(index, error);
      } else {
        ready_.emplace(index, std::move(*item));
      }
      ready_changed_.notify_all();
    }
  }

  const std::uint64_t count_;
  const std::uint64_t lookahead_;
  const Producer producer_;
  std::mutex mutex_;
  std::condition_variable claim_allowed_;
  std::condition_variable ready_changed_;
  std::uint64_t next_to_claim_ = 0;
  std::uint64_t next_to_take_ = 0;
  bool cancelled_ = false;
  std::map<std::uint64_t, T> ready_;
  std::map<std::uint64_t, std::exception_ptr> failures_;
  std::vector<std::thread> threads_;
};

}  // namespace slicestream::detector
