#include "hdf5/hdf5_handle.hpp"

#include <utility>

namespace slicestream::hdf5 {

Handle::Handle(Handle&& other) noexcept
    : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    close();
    id_ = std::exchange(other.id_, H5I_INVALID_HID);
    closer_ = other.closer_;
  }
  return *this;
}

bool Handle::close() noexcept {
  if (id_ < 0 || closer_ == nullptr) return true;
  return closer_(std::exchange(id_, H5I_INVALID_HID)) >= 0;
}

}  // namespace slicestream::hdf5
