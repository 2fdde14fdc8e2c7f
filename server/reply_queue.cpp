#include "server/reply_queue.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace slicestream {

ReplyQueue::ReplyQueue() : event_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (event_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

ReplyQueue::~ReplyQueue() {
  ::close(event_fd_);
}

void ReplyQueue::push(CompletedCommand completed) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    items_.push_back(std::move(completed));
  }
  wake();
}

void ReplyQueue::wake() {
  const std::uint64_t one = 1;
  // Only fails when the counter would overflow, and then the fd is readable anyway.
  [[maybe_unused]] const ssize_t written = ::write(event_fd_, &one, sizeof one);
}

std::deque<CompletedCommand> ReplyQueue::take_all() {
  std::uint64_t count = 0;
  [[maybe_unused]] const ssize_t got = ::read(event_fd_, &count, sizeof count);
  std::lock_guard<std::mutex> lock(mutex_);
  std::deque<CompletedCommand> taken;
  taken.swap(items_);
  return taken;
}

void ReplyQueue::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  items_.clear();
}

}  // namespace slicestream
