// The open HTTP and WebSocket connections, so that stopping the endpoint closes them all (a
// browser then sees the connection end at once). HTTP thread only.
#pragma once

#include <memory>
#include <vector>

namespace slicestream {

class Connection {
 public:
  virtual ~Connection() = default;
  virtual void close() = 0;  // ends the connection (WebSocket: a "going away" close frame)
};

class ConnectionRegistry {
 public:
  void add(const std::shared_ptr<Connection>& connection) {
    prune();
    connections_.push_back(connection);
  }
  void close_all() {
    std::vector<std::weak_ptr<Connection>> open;
    open.swap(connections_);
    for (const auto& weak : open) {
      if (auto connection = weak.lock()) connection->close();
    }
  }

 private:
  void prune() {
    std::vector<std::weak_ptr<Connection>> alive;
    for (auto& weak : connections_) {
      if (!weak.expired()) alive.push_back(std::move(weak));
    }
    connections_.swap(alive);
  }
  std::vector<std::weak_ptr<Connection>> connections_;
};

}  // namespace slicestream
