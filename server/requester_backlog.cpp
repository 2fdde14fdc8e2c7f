#include "server/requester_backlog.hpp"

#include <utility>

namespace slicestream {

struct RequesterBacklog::Reservation {
  Reservation(std::shared_ptr<State> shared, std::string id, std::size_t size)
      : state(std::move(shared)), requester(std::move(id)), bytes(size) {}
  ~Reservation() {
    std::lock_guard<std::mutex> lock(state->mutex);
    auto it = state->bytes.find(requester);
    if (it == state->bytes.end()) return;
    it->second -= bytes;
    if (it->second == 0) state->bytes.erase(it);
  }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;

  std::shared_ptr<State> state;
  std::string requester;
  std::size_t bytes;
};

RequesterBacklog::RequesterBacklog(std::size_t max_bytes_per_requester)
    : state_(std::make_shared<State>()) {
  state_->max_bytes = max_bytes_per_requester;
}

std::shared_ptr<const void> RequesterBacklog::reserve(const std::string& requester,
                                                      std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    std::size_t& held = state_->bytes[requester];
    if (held + bytes > state_->max_bytes) {
      if (held == 0) state_->bytes.erase(requester);
      return nullptr;
    }
    held += bytes;
  }
  return std::make_shared<Reservation>(state_, requester, bytes);
}

std::size_t RequesterBacklog::bytes_of(const std::string& requester) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const auto it = state_->bytes.find(requester);
  return it == state_->bytes.end() ? 0 : it->second;
}

}  // namespace slicestream
