// A bounded multi-producer multi-consumer queue connecting two pipeline stages.
//
// push() blocks while the queue is full: that is how back-pressure travels from a slow stage to
// the one before it and finally to the transport. An optional priority lane (its own small
// capacity, never blocking) lets commands overtake queued frames.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace slicestream {

template <class T>
class BoundedQueue {
 public:
  using Clock = std::chrono::steady_clock;

  explicit BoundedQueue(std::size_t capacity, std::size_t priority_capacity = 0)
      : capacity_(capacity < 1 ? 1 : capacity), priority_capacity_(priority_capacity) {}
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Blocks while full. Returns false (and leaves `item` untouched) once the queue is closed.
  bool push(T&& item) {
    std::unique_lock<std::mutex> lock(mutex_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(std::move(item));
    lock.unlock();
    not_empty_.notify_one();
    return true;
  }

  // Never blocks: false (and `item` untouched) when closed or the priority lane is full.
  bool try_push_priority(T&& item) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (closed_ || priority_.size() >= priority_capacity_) return false;
    priority_.push_back(std::move(item));
    lock.unlock();
    not_empty_.notify_one();
    return true;
  }

  // Blocks until an item is available (priority lane first). Empty once closed and drained.
  std::optional<T> pop() { return pop_until(Clock::time_point::max()); }

  // Like pop(), but gives up at `deadline` or when woken (returns empty; check exhausted() to
  // tell apart).
  std::optional<T> pop_until(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto ready = [&] { return woken_ || closed_ || !priority_.empty() || !items_.empty(); };
    if (deadline == Clock::time_point::max()) {
      not_empty_.wait(lock, ready);
    } else if (!not_empty_.wait_until(lock, deadline, ready)) {
      return std::nullopt;
    }
    woken_ = false;  // the consumer is running now: it sees whatever the waker had for it
    return take_front(lock);
  }

  // Another thread has news for the consumer that is not an item: its current or next
  // pop_until returns at once (with an item when there is one). Not for consumers of pop(), to
  // which an empty return means closed and drained.
  void wake() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      woken_ = true;
    }
    not_empty_.notify_all();
  }

  std::optional<T> try_pop() { return pop_until(Clock::time_point::min()); }

  // No more pushes; pops still return what is queued.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  // Removes everything still queued (shutdown accounting), priority lane first.
  std::vector<T> drain() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<T> out;
    out.reserve(priority_.size() + items_.size());
    for (T& item : priority_)
      out.push_back(std::move(item));
    for (T& item : items_)
      out.push_back(std::move(item));
    priority_.clear();
    items_.clear();
    not_full_.notify_all();
    return out;
  }

  bool closed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_;
  }
  // Closed and nothing left: the consumer can finish.
  bool exhausted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_ && items_.empty() && priority_.empty();
  }
  // Whether an item waiting in either lane satisfies `predicate` (a snapshot: it may change at
  // once).
  template <class Predicate>
  bool any_of(Predicate predicate) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::any_of(items_.begin(), items_.end(), predicate) ||
           std::any_of(priority_.begin(), priority_.end(), predicate);
  }
  bool empty() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return items_.empty() && priority_.empty();
  }
  // Depth of the regular lane (what back-pressure is about).
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return items_.size();
  }
  std::size_t capacity() const { return capacity_; }

 private:
  std::optional<T> take_front(std::unique_lock<std::mutex>& lock) {
    std::optional<T> out;
    if (!priority_.empty()) {
      out.emplace(std::move(priority_.front()));
      priority_.pop_front();
    } else if (!items_.empty()) {
      out.emplace(std::move(items_.front()));
      items_.pop_front();
    } else {
      return out;
    }
    lock.unlock();
    not_full_.notify_one();
    return out;
  }

  const std::size_t capacity_;
  const std::size_t priority_capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> items_;
  std::deque<T> priority_;
  bool closed_ = false;
  bool woken_ = false;
};

}  // namespace slicestream
