// Admissions of device memory from several threads (the reconstruct stage's scan and targets, the
// refinement worker's refiners). The driver's free memory falls only once an admitted allocation
// is made, so an admission holds a ticket for its bytes until its allocations are done, and every
// later check sees the driver's free memory less the bytes of admissions still in progress. The
// driver is asked and the ticket taken under one lock; the allocations themselves (a refiner's
// includes uploading its whole matrix) run outside it, so no admission waits for another's
// copies. Between an allocation and its ticket's release the bytes count twice (the driver has
// them, the ticket still holds them): a check in that window may refuse what would just fit,
// never admit what does not. Host code over a query of the driver's numbers: tested without a
// GPU.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>

namespace slicestream {

struct DeviceMemoryInfo {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

class DeviceMemoryAdmissions {
 public:
  // What the driver reports now (cudaMemGetInfo on the backend's device).
  using Query = std::function<DeviceMemoryInfo()>;

  // Holds its bytes as "in progress" until destroyed (after the admitted allocations, made or
  // failed). Empty when the admission was refused.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();

   private:
    friend class DeviceMemoryAdmissions;
    Ticket(DeviceMemoryAdmissions* owner, std::size_t bytes) : owner_(owner), bytes_(bytes) {}
    DeviceMemoryAdmissions* owner_ = nullptr;
    std::size_t bytes_ = 0;
  };

  struct Admission {
    bool admitted = false;
    // The driver's numbers at the check, free memory less the admissions in progress (for the
    // caller's message when refused).
    DeviceMemoryInfo memory;
    Ticket ticket;
  };

  explicit DeviceMemoryAdmissions(Query query) : query_(std::move(query)) {}
  // Tickets must not outlive their admissions object.
  DeviceMemoryAdmissions(const DeviceMemoryAdmissions&) = delete;
  DeviceMemoryAdmissions& operator=(const DeviceMemoryAdmissions&) = delete;

  // Admitted when `bytes` leave `reserve_bytes` of the free memory (device_memory_budget.hpp's
  // rule) after the admissions in progress; the caller keeps the ticket while it allocates.
  Admission admit(std::size_t bytes, std::size_t reserve_bytes);

  // The driver's numbers now, free memory less the admissions in progress (what admit() checks;
  // for advisory checks that allocate nothing).
  DeviceMemoryInfo available() const;

 private:
  DeviceMemoryInfo available_locked() const;  // mutex_ held
  void release(std::size_t bytes);

  Query query_;
  mutable std::mutex mutex_;
  std::size_t in_progress_ = 0;
};

}  // namespace slicestream
