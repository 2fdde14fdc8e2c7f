// A SliceSubscriber read continuously on its own thread (a PUB socket drops what a subscriber
// does not read), keeping the newest slice and refined slice per id, the newest preview and every
// event.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "clients/common/slice_subscriber.hpp"

namespace slicestream::test {

class LiveSubscriber {
 public:
  explicit LiveSubscriber(const std::string& endpoint)
      : subscriber_(endpoint,
                    {client::Topic::kSlice, client::Topic::kPreview, client::Topic::kEvent,
                     client::Topic::kRefined},
                    /*receive_hwm=*/100000),
        thread_([this] { run(); }) {}
  ~LiveSubscriber() {
    stopping_ = true;
    thread_.join();
  }

  // Waits up to `timeout` for `ready` (called with the lock held).
  bool wait_for(const std::function<bool()>& ready,
                std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, ready);
  }

  // For wait_for predicates and after waiting (the caller holds no lock: copies are returned).
  const std::map<std::uint32_t, client::Publication>& slices_locked() const { return slices_; }
  const std::vector<v1::Event>& events_locked() const { return events_; }
  const std::map<std::uint32_t, client::Publication>& refined_locked() const { return refined_; }
  std::optional<client::Publication> slice(std::uint32_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = slices_.find(id);
    if (it == slices_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<client::Publication> refined(std::uint32_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = refined_.find(id);
    if (it == refined_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<client::Publication> preview() {
    std::lock_guard<std::mutex> lock(mutex_);
    return preview_;
  }
  std::uint64_t errors() {
    std::lock_guard<std::mutex> lock(mutex_);
    return malformed_;
  }

 private:
  void run() {
    while (!stopping_) {
      std::optional<client::Publication> got;
      try {
        got = subscriber_.receive(50);
      } catch (const client::ProtocolError&) {
        std::lock_guard<std::mutex> lock(mutex_);
        ++malformed_;
        continue;
      }
      if (!got) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      switch (got->topic) {
        case client::Topic::kSlice:
          slices_[got->header.slice().slice_id()] = std::move(*got);
          break;
        case client::Topic::kPreview:
          preview_ = std::move(*got);
          break;
        case client::Topic::kEvent:
          events_.push_back(got->header.event());
          break;
        case client::Topic::kRefined:
          refined_[got->header.refined().slice().slice_id()] = std::move(*got);
          break;
      }
      changed_.notify_all();
    }
  }

  client::SliceSubscriber subscriber_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::uint32_t, client::Publication> slices_;
  std::map<std::uint32_t, client::Publication> refined_;
  std::optional<client::Publication> preview_;
  std::vector<v1::Event> events_;
  std::uint64_t malformed_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slicestream::test
