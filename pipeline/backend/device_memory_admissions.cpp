#include "pipeline/backend/device_memory_admissions.hpp"

#include <utility>

#include "pipeline/backend/device_memory_budget.hpp"

namespace slicestream {

DeviceMemoryAdmissions::Ticket::Ticket(Ticket&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceMemoryAdmissions::Ticket& DeviceMemoryAdmissions::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr) owner_->release(bytes_);
    owner_ = std::exchange(other.owner_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceMemoryAdmissions::Ticket::~Ticket() {
  if (owner_ != nullptr) owner_->release(bytes_);
}

DeviceMemoryAdmissions::Admission DeviceMemoryAdmissions::admit(std::size_t bytes,
                                                                std::size_t reserve_bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  Admission admission;
  admission.memory = available_locked();
  admission.admitted = bytes <= usable_device_bytes(admission.memory.free_bytes, reserve_bytes);
  if (admission.admitted) {
    in_progress_ += bytes;
    admission.ticket = Ticket(this, bytes);
  }
  return admission;
}

DeviceMemoryInfo DeviceMemoryAdmissions::available() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return available_locked();
}

DeviceMemoryInfo DeviceMemoryAdmissions::available_locked() const {
  DeviceMemoryInfo memory = query_();
  memory.free_bytes = memory.free_bytes > in_progress_ ? memory.free_bytes - in_progress_ : 0;
  return memory;
}

void DeviceMemoryAdmissions::release(std::size_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  in_progress_ -= bytes;
}

}  // namespace slicestream
