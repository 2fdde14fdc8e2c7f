// The one budget of host memory (--memory-limit-mb) that every allocation a client can drive is
// charged to before it is made: the CPU backend's scan (store, buffers), targets (slices, the
// preview) and slice refiners, and outside the backend the slice images on their way to the
// viewers, GetSlice results and the replies the server still has to send (docs/operations.md,
// "Memory budget"). A request that would exceed it is refused (RESOURCE_EXHAUSTED with the
// numbers); nothing accepted is removed to make room.
//
// The budget is the sum of its accounts: the backend registers the ones it reports on its own
// (targets, refiners, scan) and everyone else charges the budget's own account through
// try_charge, whose check and charge are one step. A backend account that grows while a
// try_charge checks can overshoot the limit by at most that growth (the backend checks its own
// growth against the budget before it allocates).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pipeline/backend/memory_charge.hpp"

namespace slicestream {

class MemoryBudget {
 public:
  // limit_bytes 0: three quarters of the machine's physical memory.
  explicit MemoryBudget(std::size_t limit_bytes = 0);

  std::size_t limit_bytes() const { return limit_bytes_.load(); }
  // Before anything is charged (make_backend applies --memory-limit-mb).
  void set_limit_bytes(std::size_t limit_bytes);
  std::size_t used_bytes() const;
  std::size_t free_bytes() const;
  bool fits(std::size_t bytes) const { return used_bytes() + bytes <= limit_bytes(); }

  // An account whose bytes count against the budget (the backend's own bookkeeping).
  MemoryAccount add_account();
  // Charges `bytes` to the budget when they fit, else returns null. The charge lasts as long as
  // the returned pointer (and its copies) lives. `replaced_bytes`: a charge the caller drops
  // once this one is taken (a slice set anew), counted as free.
  std::shared_ptr<MemoryCharge> try_charge(std::size_t bytes, std::size_t replaced_bytes = 0);
  // "<what> needs X MiB: Y MiB of the Z MiB memory budget are in use (--memory-limit-mb)".
  std::string shortfall(std::size_t bytes, const std::string& what) const;

 private:
  std::atomic<std::size_t> limit_bytes_;
  MemoryAccount own_;
  mutable std::mutex accounts_mutex_;
  std::mutex charging_mutex_;  // try_charge's check and charge, one caller at a time
  std::vector<MemoryAccount> accounts_;
};

using SharedMemoryBudget = std::shared_ptr<MemoryBudget>;

// Bytes in MiB with one decimal, for messages: "12.5 MiB".
std::string mib_text(std::size_t bytes);

}  // namespace slicestream
