#include "kernels/tensorcore/index_mapping.hpp"

#include <stdexcept>

namespace slicestream::tensorcore {

IndexMapping identity_mapping(long long size, long long mapped_size) {
  if (size < 0 || mapped_size < size || mapped_size > 0x7fffffffLL) {
    throw std::invalid_argument("identity_mapping: need 0 <= size <= mapped_size < 2^31");
  }
  IndexMapping m;
  m.to_mapped.resize(static_cast<std::size_t>(size));
  m.to_original.assign(static_cast<std::size_t>(mapped_size), -1);
  for (long long i = 0; i < size; ++i) {
    m.to_mapped[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
    m.to_original[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  }
  return m;
}

IndexMapping mapping_from_slots(std::vector<std::int32_t> to_mapped, long long mapped_size) {
  if (mapped_size < static_cast<long long>(to_mapped.size()) || mapped_size > 0x7fffffffLL) {
    throw std::invalid_argument("mapping_from_slots: mapped space smaller than the index space");
  }
  IndexMapping m;
  m.to_original.assign(static_cast<std::size_t>(mapped_size), -1);
  for (std::size_t i = 0; i < to_mapped.size(); ++i) {
    const std::int32_t slot = to_mapped[i];
    if (slot < 0 || slot >= mapped_size) {
      throw std::invalid_argument("mapping_from_slots: slot out of range");
    }
    if (m.to_original[static_cast<std::size_t>(slot)] != -1) {
      throw std::invalid_argument("mapping_from_slots: two indices map to one slot");
    }
    m.to_original[static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(i);
  }
  m.to_mapped = std::move(to_mapped);
  return m;
}

}  // namespace slicestream::tensorcore
