// A renumbering of matrix rows or columns: each original index gets a distinct slot in a mapped
// index space that may be larger (slots no original index maps to are padding, always zero).
// The BSR matrix is stored in mapped order; images and sinograms are mapped before the products
// and results unmapped after (paper Fig. 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace slicestream::tensorcore {

struct IndexMapping {
  std::vector<std::int32_t> to_mapped;    // original index -> slot
  std::vector<std::int32_t> to_original;  // slot -> original index, -1 for padding
  long long size() const { return static_cast<long long>(to_mapped.size()); }
  long long mapped_size() const { return static_cast<long long>(to_original.size()); }
};

IndexMapping identity_mapping(long long size, long long mapped_size);
// Builds both directions from original -> slot; throws std::invalid_argument if two indices
// share a slot or a slot is out of range.
IndexMapping mapping_from_slots(std::vector<std::int32_t> to_mapped, long long mapped_size);

}  // namespace slicestream::tensorcore
