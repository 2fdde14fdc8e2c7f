// The live slices of the reconstruct stage, each with its targets: the live target the viewers
// see and the shadow target that accumulates one rotation at a time (per-rotation mode, and the
// periodic refresh that bounds the float drift of the sliding window). Knows which slots a shadow
// has received this rotation and completes it from the store, places the slices on each scan's
// box, and builds every projection's target lists. Runs on the reconstruct thread only.
//
// Across scans (docs/protocol.md, "Slices across scans"): the default slices 0, 1, 2 are placed
// on every scan's box with square pixels, unless a client set a slice of its own under that id or
// removed it (a removal stays until reset()); a client's slice in box coordinates is mapped onto
// every scan's box; a client's slice in world mm stays where it is and is marked when it misses
// the box.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/grid_spec.hpp"
#include "pipeline/backend/backend.hpp"
#include "pipeline/messages/command.hpp"

namespace slicestream {

// What a target shows: how many projections of the scan are integrated and the newest of them.
struct WindowContent {
  std::uint64_t projections_integrated = 0;
  std::uint64_t newest_timestamp_ns = 0;
  std::uint64_t newest_arrival_ns = 0;
};

struct Slice {
  SetSliceCommand spec;  // where it is: world mm (box_coordinates false)
  SlicePlacement placement = SlicePlacement::kWorld;
  SliceOrientation box_orientation;  // kBox: the client's orientation in box coordinates
  bool outside_box = false;          // it misses the scan's box

  std::unique_ptr<ReconTarget> live;    // null while no scan's store is there
  std::unique_ptr<ReconTarget> shadow;  // kept between rotations for reuse
  bool shadow_active = false;
  std::vector<bool> covered;  // slots the shadow received this rotation
  std::size_t covered_count = 0;
  std::uint64_t rebuilt_rotation = 0;  // the live target was last rebuilt in this rotation
  WindowContent shows;                 // what the live target shows
  // A live target computed from the store in units (build_unit) because frames were waiting when
  // it had to be computed: slots [0, built_slots) are in it, and a frame for one of them updates
  // it as a live target (the others it reads from the store later). It is not shown until every
  // slot is in; then it becomes `live`.
  std::unique_ptr<ReconTarget> building;
  int built_slots = 0;
  // A client's slice holds its room in the memory budget from SetSlice to RemoveSlice: one
  // publication on its way to the viewers (the image and the outgoing message's copy), and before
  // a scan builds its target the target's host memory too, so that a scan start never has to drop a
  // slice it accepted. Null for default slices.
  std::shared_ptr<MemoryCharge> reservation;
};

// A client's slice from its SetSlice; a slice in box coordinates is placed on `box` when there is
// one (else when the next scan starts).
Slice client_slice(const SetSliceCommand& command, const VolumeBox* box);

class SliceSet {
 public:
  using Slices = std::map<std::uint32_t, Slice>;

  explicit SliceSet(Backend& backend) : backend_(backend) {}

  Slices& slices() { return slices_; }
  const Slices& slices() const { return slices_; }
  Slice* find(std::uint32_t id);
  std::vector<SetSliceCommand> specs() const;
  std::vector<SliceInfo> info() const;
  // A client sets or replaces slice `id`.
  Slice& set(std::uint32_t id, Slice slice);
  // A client removes slice `id`; a default id (0-2) stays free until reset(), also when it is
  // removed before its default slice was placed. False when there was nothing to remove.
  bool remove(std::uint32_t id);
  // Every slice goes and the default slices may come back; returns the ids removed.
  std::vector<std::uint32_t> reset();
  // Places the slices on a scan's box: the default slices (the longer side `longer_side` pixels,
  // square pixels) replace the earlier default ones, box slices are mapped onto it, world slices
  // are marked when they miss it. Returns the ids of the default slices placed.
  std::vector<std::uint32_t> place_on_box(const VolumeBox& box, int longer_side);

  // Reserves the room `slice` needs (see Slice::reservation; `with_target` before a scan), the
  // reservation of `replaced` (the slice it replaces, or null) counted as free. Empty when it
  // fits, else the shortfall in words.
  std::string reserve(Slice& slice, const Slice* replaced, bool with_target);
  // The charge a publication of `slice`'s image travels with: its reservation when no earlier
  // image holds it, else a new charge; null when the budget has no room now.
  std::shared_ptr<MemoryCharge> image_charge(const Slice& slice);

  // The store the targets are computed from: `window` slots, backprojected with `scale`.
  void begin_scan(int window, float scale);
  int window() const { return window_; }
  float scale() const { return scale_; }
  const std::vector<int>& all_slots() const { return all_slots_; }
  // Every target goes (with the store); shadows stop; reservations take their targets' room
  // back for the next scan.
  void release_targets();

  // A new live target filled from the store (throws BackendError; the slice is then unchanged).
  void build_targets(Slice& slice, const WindowContent& content, std::uint64_t rotation);
  // The slice's live target is computed anew in units instead (build_unit): its live target, or
  // a new one (throws BackendError as build_targets), becomes the target being built, not shown
  // meanwhile. A build in progress starts again from the first slot.
  void start_build(Slice& slice);
  // Adds the next slots of the store to the slice's build, about `max_updates` pixel-projection
  // updates (one slot at least); when every slot is in, the target becomes live, showing
  // `content`, and it returns true.
  bool build_unit(Slice& slice, std::size_t max_updates, const WindowContent& content,
                  std::uint64_t rotation);
  // The slice with the lowest id whose build is in progress, or null.
  std::pair<std::uint32_t, Slice*> next_build();
  bool any_build() const;
  // The live target := the backprojection of the whole store.
  void recompute(Slice& slice, const WindowContent& content, std::uint64_t rotation);
  // The shadow starts empty and collects this rotation's projections.
  void start_shadow(Slice& slice);
  // Adds the slots the shadow did not receive from the store, so that it equals a full recompute,
  // and makes it the live target. On a BackendError the shadow stops and the live target stays.
  void complete_shadow(Slice& slice, std::uint64_t rotation);
  bool shadow_full(const Slice& slice) const;
  bool any_shadow_full() const;

  // The target lists of a projection stored in `slot`: every live target when `sliding`, and
  // every active shadow, which accumulates it the first time it receives the slot this rotation
  // and afterwards replaces it as a live target does.
  void add_targets(int slot, bool sliding, ProjectionUpdate& update);

 private:
  // A target for the slice's grid, charged in place of the target its reservation held.
  std::unique_ptr<ReconTarget> new_target(Slice& slice);
  std::size_t publication_bytes(const Slice& slice) const;
  std::size_t target_bytes(const Slice& slice) const;

  Backend& backend_;
  Slices slices_;
  std::set<std::uint32_t> removed_defaults_;  // default ids a client removed
  int window_ = 0;
  float scale_ = 0;
  std::vector<int> all_slots_;
};

}  // namespace slicestream
