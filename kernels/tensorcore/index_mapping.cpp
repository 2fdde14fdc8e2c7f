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

std::string validate_mapping(const IndexMapping& mapping) {
  long long used = 0;
  for (std::size_t slot = 0; slot < mapping.to_original.size(); ++slot) {
    const std::int32_t original = mapping.to_original[slot];
    if (original == -1) continue;
    ++used;
    if (original < 0 || original >= mapping.size() ||
        mapping.to_mapped[static_cast<std::size_t>(original)] != static_cast<std::int32_t>(slot)) {
      return "to_original and to_mapped disagree at slot " + std::to_string(slot);
    }
  }
  if (used != mapping.size()) return "some original indices have no slot";
  return {};
}

void map_rows(const IndexMapping& mapping, const float* in, float* out, int columns) {
  for (long long slot = 0; slot < mapping.mapped_size(); ++slot) {
    const std::int32_t original = mapping.to_original[static_cast<std::size_t>(slot)];
    for (int c = 0; c < columns; ++c) {
      out[slot * columns + c] =
          original < 0 ? 0.0f : in[static_cast<long long>(original) * columns + c];
    }
  }
}

void unmap_rows(const IndexMapping& mapping, const float* in, float* out, int columns) {
  for (long long i = 0; i < mapping.size(); ++i) {
    const long long slot = mapping.to_mapped[static_cast<std::size_t>(i)];
    for (int c = 0; c < columns; ++c)
      out[i * columns + c] = in[slot * columns + c];
  }
}

}  // namespace slicestream::tensorcore
