// What each slot of a backend's projection store holds, as far as planning and backprojection
// care: whether it is filled and the map its projection is backprojected with. Both backends keep
// one next to their stored data, so that the update plan (update_plan.hpp) reads one kind of store.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/projection_map.hpp"

namespace slicestream {

class StoreSlots {
 public:
  // `owner` prefixes error messages ("cpu backend", "cuda backend").
  explicit StoreSlots(std::string owner = "backend", std::size_t count = 0);

  const std::string& owner() const { return owner_; }
  std::size_t size() const { return maps_.size(); }
  bool contains(int slot) const { return slot >= 0 && index(slot) < maps_.size(); }
  bool filled(int slot) const { return filled_[index(slot)]; }
  const ProjectionMap& map(int slot) const { return maps_[index(slot)]; }

  // The slot now holds a projection taken with `map`.
  void store(int slot, const ProjectionMap& map);
  // The slot's data must not be read again (it holds something other than its projection).
  void forget(int slot) { filled_[index(slot)] = false; }
  // Replaces every slot's map (centre-of-rotation change); throws BackendError unless `maps`
  // has one entry per slot.
  void set_maps(const std::vector<ProjectionMap>& maps);
  // The filled ones of `slots` (each checked), in order.
  std::vector<int> filled_of(const std::vector<int>& slots) const;

 private:
  static std::size_t index(int slot) { return static_cast<std::size_t>(slot); }
  // Throws BackendError when `slot` lies outside the window.
  void check(int slot) const;

  std::string owner_;
  std::vector<ProjectionMap> maps_;
  std::vector<bool> filled_;
};

// Throws BackendError unless [plane_begin, plane_end) lies within a grid of depth `depth`.
void check_plane_range(const std::string& owner, int depth, int plane_begin, int plane_end);

}  // namespace slicestream
