// A share of a backend's memory account held by one object (a slice refiner): added when taken,
// adjusted when the holder grows, given back when it goes. The account is shared with the
// backend (whose budget checks read it), which may be destroyed first.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace slicestream {

using MemoryAccount = std::shared_ptr<std::atomic<std::size_t>>;

class MemoryCharge {
 public:
  MemoryCharge(MemoryAccount account, std::size_t bytes)
      : account_(std::move(account)), bytes_(bytes) {
    if (account_) *account_ += bytes_;
  }
  ~MemoryCharge() {
    if (account_) *account_ -= bytes_;
  }
  MemoryCharge(const MemoryCharge&) = delete;
  MemoryCharge& operator=(const MemoryCharge&) = delete;

  // The holder now holds `bytes`.
  void set(std::size_t bytes) {
    if (account_) {
      *account_ += bytes;
      *account_ -= bytes_;
    }
    bytes_ = bytes;
  }
  std::size_t bytes() const { return bytes_; }

 private:
  MemoryAccount account_;
  std::size_t bytes_;
};

}  // namespace slicestream
