// Requests answered, by the endpoint that took them, their kind and the status they were answered
// with (the Prometheus counter slicestream_requests_total). Any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace slicestream {

struct RequestCountKey {
  std::string endpoint;  // "requests" (ZeroMQ), "websocket", "http"
  std::string kind;      // "set_slice", ..., "unknown" when the request could not be read
  std::string status;    // "ok", "invalid_argument", ... (the wire StatusCode, lower case)
  bool operator<(const RequestCountKey& other) const {
    return std::tie(endpoint, kind, status) < std::tie(other.endpoint, other.kind, other.status);
  }
};

class RequestCounters {
 public:
  void add(RequestCountKey key) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_[std::move(key)];
  }
  std::map<RequestCountKey, std::uint64_t> snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<RequestCountKey, std::uint64_t> counts_;
};

}  // namespace slicestream
