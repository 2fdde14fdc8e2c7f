// CPU twin of the projection store's replacement pass (cuda::ProjectionTextureStore::replace_slots,
// one entry): the same arithmetic in the same order, so that the GPU's slot layers and scratch
// can be checked value by value. The new value is read at the projection's row pitch (the ramp
// filter's padded rows are cropped here), rounded to the slot's texel type first (fp16: to
// nearest, ties to even, as __float2half_rn), and the scratch, in the slot's texels, takes the
// difference of the values as stored (new - old, exact in fp32, then rounded and clamped to fp16
// like a value) or the old stored value.
#pragma once

#include <vector>

#include "kernels/frame_view.hpp"

namespace slicestream::cpu {

enum class SlotTexels { kFloat32, kFloat16 };
enum class SlotScratch { kUnchanged, kDifference, kOldProjection };

// `value` as a slot of these texels keeps it (read back as fp32): fp16 rounds to nearest and
// clamps to +-65504 (NaN to 0), as the store's replacement pass does.
float as_stored(float value, SlotTexels texels);

// A projection whose rows lie `row_pitch` floats apart (>= shape.cols; throws otherwise).
struct PitchedProjection {
  const float* values = nullptr;
  int row_pitch = 0;
};

// Replaces `slot` (shape.pixels() values as stored, read back as fp32) with `fresh` in place and
// leaves `scratch` as asked (resized to shape.pixels(); untouched for kUnchanged).
void replace_slot(DetectorShape shape, PitchedProjection fresh, SlotTexels texels, SlotScratch what,
                  std::vector<float>& slot, std::vector<float>& scratch);

}  // namespace slicestream::cpu
