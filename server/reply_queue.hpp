// Replies travelling from pipeline threads to the requests endpoint's thread.
//
// Any thread may push; the endpoint thread waits on fd() inside zmq_poll (an eventfd), so a reply
// wakes it at once and the ROUTER socket stays with its own thread. After close() pushes are
// ignored: callbacks that outlive the endpoint (it shares ownership of the queue) are harmless.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>

#include "pipeline/messages/command.hpp"

namespace slicestream {

struct CompletedCommand {
  std::uint64_t token = 0;  // the endpoint's handle of the pending request
  CommandReply reply;
};

class ReplyQueue {
 public:
  ReplyQueue();  // throws std::system_error when no eventfd can be created
  ~ReplyQueue();
  ReplyQueue(const ReplyQueue&) = delete;
  ReplyQueue& operator=(const ReplyQueue&) = delete;

  void push(CompletedCommand completed);    // any thread
  void wake();                              // any thread: makes fd() readable
  std::deque<CompletedCommand> take_all();  // endpoint thread; also clears the wake-up
  void close();
  int fd() const { return event_fd_; }

 private:
  int event_fd_ = -1;
  std::mutex mutex_;
  std::deque<CompletedCommand> items_;
  bool closed_ = false;
};

}  // namespace slicestream
