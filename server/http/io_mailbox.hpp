// Hands work from other threads (pipeline replies, publications) to the HTTP thread. After
// close() nothing more is posted, so a late pipeline callback never touches an io_context that
// is being torn down.
#pragma once

#include <functional>
#include <mutex>

#include "server/http/beast.hpp"

namespace slicestream {

class IoMailbox {
 public:
  explicit IoMailbox(net::io_context& io) : io_(io) {}

  // Runs `handler` on the HTTP thread; false (and nothing runs) once closed. Any thread.
  bool post(std::function<void()> handler) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return false;
    net::post(io_, std::move(handler));
    return true;
  }
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }

 private:
  net::io_context& io_;
  std::mutex mutex_;
  bool closed_ = false;
};

}  // namespace slicestream
