#include "pipeline/backend/store_slots.hpp"

#include <utility>

#include "pipeline/backend/backend.hpp"

namespace slicestream {

StoreSlots::StoreSlots(std::string owner, std::size_t count)
    : owner_(std::move(owner)), maps_(count, ProjectionMap{}), filled_(count, false) {}

void StoreSlots::check(int slot) const {
  if (!contains(slot)) {
    throw BackendError(owner_ + ": slot " + std::to_string(slot) + " outside the window of " +
                       std::to_string(maps_.size()));
  }
}

void StoreSlots::store(int slot, const ProjectionMap& map) {
  maps_[index(slot)] = map;
  filled_[index(slot)] = true;
}

void StoreSlots::set_maps(const std::vector<ProjectionMap>& maps) {
  if (maps.size() != maps_.size()) {
    throw BackendError(owner_ + ": set_slot_maps got " + std::to_string(maps.size()) +
                       " maps for " + std::to_string(maps_.size()) + " slots");
  }
  maps_ = maps;
}

std::vector<int> StoreSlots::filled_of(const std::vector<int>& slots) const {
  std::vector<int> filled;
  filled.reserve(slots.size());
  for (int slot : slots) {
    check(slot);
    if (filled_[index(slot)]) filled.push_back(slot);
  }
  return filled;
}

void check_plane_range(const std::string& owner, int depth, int plane_begin, int plane_end) {
  if (plane_begin < 0 || plane_end > depth || plane_begin > plane_end) {
    throw BackendError(owner + ": plane range [" + std::to_string(plane_begin) + ", " +
                       std::to_string(plane_end) + ") outside a target of depth " +
                       std::to_string(depth));
  }
}

}  // namespace slicestream
