// The measured sinogram b of one refined slice: for every window slot, the slice's detector row
// (interpolated between two rows) of the projection the store holds in that slot, taken before
// the ramp filter (and, for cone beam, with the FDK cosine pre-weight divided out). It follows the
// projection store: a slot is replaced with every new projection and emptied when that projection
// arrived without the rows (captured before the slice asked for them), so a complete window always
// matches the store, and the FBP slice, exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/projection_map.hpp"
#include "pipeline/messages/stage_items.hpp"
#include "pipeline/refinement/refinement_plan.hpp"

namespace slicestream {

class SinogramWindow {
 public:
  // Every slot empty.
  void reset(int slots, int bins);
  // Slot `slot` takes the plan's row from `captured`; without it the slot becomes empty.
  // `preweight`: the FDK cosine weight preprocessing applied to the projection (cone beam; see
  // make_cosine_weight), divided out so that the window holds line integrals; disabled for
  // parallel beam. Returns whether the row was there.
  bool store(int slot, const RefinementPlan& plan, const CapturedRows& captured,
             const CosineWeight& preweight);
  void clear_slot(int slot);

  int slots() const { return static_cast<int>(filled_.size()); }
  int bins() const { return bins_; }
  int filled() const { return filled_count_; }
  bool complete() const { return filled_count_ == slots() && slots() > 0; }
  // slots x bins, projection-major (the SliceRefiner's sinogram layout).
  const std::vector<float>& values() const { return values_; }
  // Changes with every stored or emptied slot.
  std::uint64_t version() const { return version_; }

 private:
  int bins_ = 0;
  std::vector<float> values_;
  std::vector<bool> filled_;
  int filled_count_ = 0;
  std::uint64_t version_ = 0;
};

}  // namespace slicestream
