#include "pipeline/stages/slice_set.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace slicestream {

Slice* SliceSet::find(std::uint32_t id) {
  const auto it = slices_.find(id);
  return it == slices_.end() ? nullptr : &it->second;
}

Slice client_slice(const SetSliceCommand& command, const VolumeBox* box) {
  Slice slice;
  slice.spec = command;
  slice.spec.box_coordinates = false;
  if (command.box_coordinates) {
    slice.placement = SlicePlacement::kBox;
    slice.box_orientation = command.orientation;
    if (box != nullptr) slice.spec.orientation = from_normalized(command.orientation, *box);
  } else if (box != nullptr) {
    slice.outside_box = !slice_meets_box(command.orientation, *box);
  }
  return slice;
}

std::vector<SetSliceCommand> SliceSet::specs() const {
  std::vector<SetSliceCommand> specs;
  for (const auto& [id, slice] : slices_)
    specs.push_back(slice.spec);
  return specs;
}

std::vector<SliceInfo> SliceSet::info() const {
  std::vector<SliceInfo> info;
  for (const auto& [id, slice] : slices_)
    info.push_back(SliceInfo{id, slice.placement, slice.box_orientation, slice.outside_box});
  return info;
}

Slice& SliceSet::set(std::uint32_t id, Slice slice) {
  Slice& stored = slices_[id];
  stored = std::move(slice);
  return stored;
}

bool SliceSet::remove(std::uint32_t id) {
  if (id < kDefaultSliceCount) {
    // A default id can be removed before its slice is placed (no default slices then at all).
    const bool newly = removed_defaults_.insert(id).second;
    return slices_.erase(id) > 0 || newly;
  }
  return slices_.erase(id) > 0;
}

std::vector<std::uint32_t> SliceSet::reset() {
  std::vector<std::uint32_t> removed;
  for (const auto& [id, slice] : slices_)
    removed.push_back(id);
  slices_.clear();
  removed_defaults_.clear();
  return removed;
}

std::vector<std::uint32_t> SliceSet::place_on_box(const VolumeBox& box, int longer_side) {
  for (auto it = slices_.begin(); it != slices_.end();) {
    Slice& slice = it->second;
    if (slice.placement == SlicePlacement::kDefault) {
      it = slices_.erase(it);
      continue;
    }
    if (slice.placement == SlicePlacement::kBox) {
      slice.spec.orientation = from_normalized(slice.box_orientation, box);
    } else {
      slice.outside_box = !slice_meets_box(slice.spec.orientation, box);
    }
    ++it;
  }
  const std::array<SliceOrientation, kDefaultSliceCount> orientations = default_slices(box);
  std::vector<std::uint32_t> placed;
  for (std::uint32_t id = 0; id < kDefaultSliceCount; ++id) {
    if (slices_.count(id) > 0 || removed_defaults_.count(id) > 0) continue;
    const auto [width, height] = square_pixel_size(orientations[id], longer_side);
    Slice slice;
    slice.spec = SetSliceCommand{id, orientations[id], width, height};
    slice.placement = SlicePlacement::kDefault;
    slices_.emplace(id, std::move(slice));
    placed.push_back(id);
  }
  return placed;
}

void SliceSet::begin_scan(int window, float scale) {
  window_ = window;
  scale_ = scale;
  all_slots_.resize(static_cast<std::size_t>(window));
  std::iota(all_slots_.begin(), all_slots_.end(), 0);
}

std::size_t SliceSet::publication_bytes(const Slice& slice) const {
  // The image and, while the publisher sends it, the outgoing message's copy.
  return 2 * static_cast<std::size_t>(slice.spec.width) *
         static_cast<std::size_t>(slice.spec.height) * sizeof(float);
}

std::size_t SliceSet::target_bytes(const Slice& slice) const {
  return backend_.target_host_bytes(
      slice_grid(slice.spec.orientation, slice.spec.width, slice.spec.height));
}

std::string SliceSet::reserve(Slice& slice, const Slice* replaced, bool with_target) {
  const std::size_t bytes = publication_bytes(slice) + (with_target ? target_bytes(slice) : 0);
  // A replaced reservation still travelling with an image is not free yet.
  const bool replaced_free =
      replaced != nullptr && replaced->reservation && replaced->reservation.use_count() == 1;
  const std::size_t replaced_bytes = replaced_free ? replaced->reservation->bytes() : 0;
  slice.reservation = backend_.host_memory()->try_charge(bytes, replaced_bytes);
  if (slice.reservation) return {};
  return backend_.host_memory()->shortfall(
      bytes, "a " + std::to_string(slice.spec.width) + " x " + std::to_string(slice.spec.height) +
                 " slice (its image" + (with_target ? " and its target)" : ")"));
}

std::shared_ptr<MemoryCharge> SliceSet::image_charge(const Slice& slice) {
  // Only this thread hands the reservation out; others only drop it, so a count of 1 stays 1.
  if (slice.reservation && slice.reservation.use_count() == 1) return slice.reservation;
  return backend_.host_memory()->try_charge(publication_bytes(slice));
}

void SliceSet::release_targets() {
  for (auto& [id, slice] : slices_) {
    slice.live.reset();
    slice.building.reset();
    slice.shadow.reset();
    slice.shadow_active = false;
    if (slice.reservation) slice.reservation->set(publication_bytes(slice) + target_bytes(slice));
  }
}

std::unique_ptr<ReconTarget> SliceSet::new_target(Slice& slice) {
  // The reservation makes room for the target the backend charges now.
  if (slice.reservation) slice.reservation->set(publication_bytes(slice));
  try {
    return backend_.create_target(
        slice_grid(slice.spec.orientation, slice.spec.width, slice.spec.height));
  } catch (...) {
    if (slice.reservation && !slice.live && !slice.building) {
      slice.reservation->set(publication_bytes(slice) + target_bytes(slice));
    }
    throw;
  }
}

void SliceSet::build_targets(Slice& slice, const WindowContent& content, std::uint64_t rotation) {
  std::unique_ptr<ReconTarget> live = new_target(slice);
  slice.live = std::move(live);
  slice.building.reset();
  slice.shadow.reset();
  slice.shadow_active = false;
  slice.covered.clear();
  recompute(slice, content, rotation);
}

void SliceSet::start_build(Slice& slice) {
  if (!slice.building) slice.building = slice.live ? std::move(slice.live) : new_target(slice);
  slice.live.reset();
  slice.shadow_active = false;
  slice.built_slots = 0;
}

bool SliceSet::build_unit(Slice& slice, std::size_t max_updates, const WindowContent& content,
                          std::uint64_t rotation) {
  const std::size_t pixels = std::max<std::size_t>(slice.building->grid().points(), 1);
  const auto left = static_cast<std::size_t>(std::max(window_ - slice.built_slots, 0));
  std::vector<int> slots(std::min(std::max<std::size_t>(max_updates / pixels, 1), left));
  std::iota(slots.begin(), slots.end(), slice.built_slots);
  if (!slots.empty()) {
    backend_.backproject_store(slots, *slice.building, scale_,
                               /*accumulate=*/slice.built_slots > 0, 0,
                               slice.building->grid().depth);
  }
  slice.built_slots += static_cast<int>(slots.size());
  if (slice.built_slots < window_) return false;
  slice.live = std::move(slice.building);
  slice.rebuilt_rotation = rotation;
  slice.shows = content;
  return true;
}

std::pair<std::uint32_t, Slice*> SliceSet::next_build() {
  for (auto& [id, slice] : slices_) {
    if (slice.building) return {id, &slice};
  }
  return {0, nullptr};
}

bool SliceSet::any_build() const {
  return std::any_of(slices_.begin(), slices_.end(),
                     [](const auto& entry) { return entry.second.building != nullptr; });
}

void SliceSet::recompute(Slice& slice, const WindowContent& content, std::uint64_t rotation) {
  backend_.backproject_store(all_slots_, *slice.live, scale_, /*accumulate=*/false, 0,
                             slice.live->grid().depth);
  slice.rebuilt_rotation = rotation;
  slice.shows = content;
}

void SliceSet::start_shadow(Slice& slice) {
  if (!slice.shadow) slice.shadow = backend_.create_target(slice.live->grid());
  backend_.clear_target(*slice.shadow);
  slice.covered.assign(static_cast<std::size_t>(window_), false);
  slice.covered_count = 0;
  slice.shadow_active = true;
}

void SliceSet::complete_shadow(Slice& slice, std::uint64_t rotation) {
  slice.shadow_active = false;
  std::vector<int> missing;
  for (int s = 0; s < window_; ++s) {
    if (!slice.covered[static_cast<std::size_t>(s)]) missing.push_back(s);
  }
  if (!missing.empty()) {
    backend_.backproject_store(missing, *slice.shadow, scale_, /*accumulate=*/true, 0,
                               slice.shadow->grid().depth);
  }
  std::swap(slice.live, slice.shadow);
  slice.rebuilt_rotation = rotation;
}

bool SliceSet::shadow_full(const Slice& slice) const {
  return slice.shadow_active && slice.covered_count >= static_cast<std::size_t>(window_);
}

bool SliceSet::any_shadow_full() const {
  return std::any_of(slices_.begin(), slices_.end(),
                     [&](const auto& entry) { return shadow_full(entry.second); });
}

void SliceSet::add_targets(int slot, bool sliding, ProjectionUpdate& update) {
  for (auto& [id, slice] : slices_) {
    // A build holds the slots before built_slots; it reads the others from the store later.
    if (slice.building && slot < slice.built_slots) update.live.push_back(slice.building.get());
    if (!slice.live) continue;
    if (sliding) update.live.push_back(slice.live.get());
    if (!slice.shadow_active) continue;
    std::vector<bool>::reference covered = slice.covered[static_cast<std::size_t>(slot)];
    if (covered) {
      update.live.push_back(slice.shadow.get());  // the shadow already holds this slot
    } else {
      update.accumulate.push_back(slice.shadow.get());
      covered = true;
      ++slice.covered_count;
    }
  }
}

}  // namespace slicestream
