// Counters of the HTTP + WebSocket endpoint (server/http/), exposed in /metrics beside the
// pipeline's and the other endpoints'. Any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace slicestream {

struct HttpCounters {
  std::atomic<std::uint64_t> connections_accepted{0};
  std::atomic<std::uint64_t> connections_refused{0};  // over --http-max-connections
  std::atomic<std::int64_t> connections_open{0};
  std::atomic<std::int64_t> websocket_sessions{0};
  std::atomic<std::uint64_t> websocket_frames_sent{0};  // slices, previews, replies, events
  std::atomic<std::uint64_t> websocket_bytes_sent{0};
  // An update for a slice (or the preview) replaced by a newer one before it was sent: a slow
  // connection gets the latest image, not a backlog.
  std::atomic<std::uint64_t> websocket_updates_superseded{0};
  // Events a connection could not take (its event queue was full); it is told how many.
  std::atomic<std::uint64_t> websocket_events_dropped{0};
  // Image copies the memory budget had no room for: updates not taken, encodings that waited.
  std::atomic<std::uint64_t> websocket_updates_over_budget{0};
  std::atomic<std::uint64_t> websocket_messages_refused{0};  // too large, too fast, not JSON

  // HTTP responses by route ("/metrics", "static", "upgrade", ...) and status code.
  void add_response(const std::string& route, unsigned status) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++responses_[{route, status}];
  }
  std::map<std::pair<std::string, unsigned>, std::uint64_t> responses() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return responses_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, unsigned>, std::uint64_t> responses_;
};

}  // namespace slicestream
