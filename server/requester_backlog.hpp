// Bytes of GetSlice results each requester has coming: reserved when the endpoint accepts its
// GetSlice (before the pipeline computes anything), given back when ZeroMQ has sent or dropped
// the reply's values. A requester that does not read its replies therefore cannot make the server
// hold more than the limit (--max-reply-backlog) for it; its next GetSlice is refused
// RESOURCE_EXHAUSTED ("reply_backlog") until it reads.
//
// A requester is one connection at the requests endpoint (its ZeroMQ routing id).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace slicestream {

class RequesterBacklog {
 public:
  explicit RequesterBacklog(std::size_t max_bytes_per_requester);

  // A reservation of `bytes` for `requester`, held until the returned pointer (and its copies)
  // is gone, from any thread; null when the requester's backlog would exceed the limit.
  std::shared_ptr<const void> reserve(const std::string& requester, std::size_t bytes);
  std::size_t bytes_of(const std::string& requester) const;
  std::size_t max_bytes() const { return state_->max_bytes; }

 private:
  struct State {
    std::size_t max_bytes = 0;
    mutable std::mutex mutex;
    std::map<std::string, std::size_t> bytes;
  };
  struct Reservation;

  // Shared with the reservations: ZeroMQ's I/O thread may free the last one after the endpoint.
  std::shared_ptr<State> state_;
};

}  // namespace slicestream
