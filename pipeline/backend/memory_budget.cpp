#include "pipeline/backend/memory_budget.hpp"

#include <unistd.h>

#include <cstdio>

namespace slicestream {
namespace {

std::size_t default_limit_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return std::size_t{4} << 30;
  return static_cast<std::size_t>(pages) / 4 * 3 * static_cast<std::size_t>(page_size);
}

}  // namespace

MemoryBudget::MemoryBudget(std::size_t limit_bytes)
    : limit_bytes_(limit_bytes > 0 ? limit_bytes : default_limit_bytes()),
      own_(std::make_shared<std::atomic<std::size_t>>(0)),
      accounts_{own_} {}

void MemoryBudget::set_limit_bytes(std::size_t limit_bytes) {
  limit_bytes_ = limit_bytes > 0 ? limit_bytes : default_limit_bytes();
}

std::size_t MemoryBudget::used_bytes() const {
  std::lock_guard<std::mutex> lock(accounts_mutex_);
  std::size_t used = 0;
  for (const MemoryAccount& account : accounts_)
    used += account->load();
  return used;
}

std::size_t MemoryBudget::free_bytes() const {
  const std::size_t used = used_bytes();
  const std::size_t limit = limit_bytes();
  return used < limit ? limit - used : 0;
}

MemoryAccount MemoryBudget::add_account() {
  auto account = std::make_shared<std::atomic<std::size_t>>(0);
  std::lock_guard<std::mutex> lock(accounts_mutex_);
  accounts_.push_back(account);
  return account;
}

std::shared_ptr<MemoryCharge> MemoryBudget::try_charge(std::size_t bytes,
                                                       std::size_t replaced_bytes) {
  std::lock_guard<std::mutex> lock(charging_mutex_);
  const std::size_t used = used_bytes();
  const std::size_t counted = used > replaced_bytes ? used - replaced_bytes : 0;
  if (counted + bytes > limit_bytes()) return nullptr;
  return std::make_shared<MemoryCharge>(own_, bytes);
}

std::string MemoryBudget::shortfall(std::size_t bytes, const std::string& what) const {
  return what + " needs " + mib_text(bytes) + ": " + mib_text(used_bytes()) + " of the " +
         mib_text(limit_bytes()) + " memory budget are in use (--memory-limit-mb)";
}

std::string mib_text(std::size_t bytes) {
  char text[48];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace slicestream
