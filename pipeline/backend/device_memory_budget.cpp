#include "pipeline/backend/device_memory_budget.hpp"

#include <sstream>

namespace slicestream {
namespace {

std::string mib(std::size_t bytes) {
  std::ostringstream out;
  out.precision(4);
  out << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return out.str();
}

}  // namespace

std::size_t usable_device_bytes(std::size_t free_bytes, std::size_t reserve_bytes) {
  return free_bytes > reserve_bytes ? free_bytes - reserve_bytes : 0;
}

std::string device_memory_shortfall(std::size_t bytes, std::size_t free_bytes,
                                    std::size_t reserve_bytes) {
  if (bytes <= usable_device_bytes(free_bytes, reserve_bytes)) return {};
  return mib(bytes) + ", " + mib(free_bytes) + " are free and " + mib(reserve_bytes) +
         " stay reserved";
}

}  // namespace slicestream
