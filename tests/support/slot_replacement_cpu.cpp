#include "tests/support/slot_replacement_cpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "kernels/half_float.hpp"
#include "kernels/half_range.hpp"

namespace slicestream::cpu {

float as_stored(float value, SlotTexels texels) {
  if (texels == SlotTexels::kFloat32) return value;
  if (std::isnan(value)) value = 0.0f;
  value = std::clamp(value, -kHalfMax, kHalfMax);
  return half_to_float(float_to_half(value));
}

void replace_slot(DetectorShape shape, PitchedProjection fresh, SlotTexels texels, SlotScratch what,
                  std::vector<float>& slot, std::vector<float>& scratch) {
  if (fresh.values == nullptr) throw std::invalid_argument("replace_slot: no projection");
  if (fresh.row_pitch < shape.cols) {
    throw std::invalid_argument("replace_slot: rows " + std::to_string(fresh.row_pitch) +
                                " floats apart for " + std::to_string(shape.cols) + " columns");
  }
  if (slot.size() != shape.pixels()) {
    throw std::invalid_argument("replace_slot: the slot holds " + std::to_string(slot.size()) +
                                " values, the detector " + std::to_string(shape.pixels()));
  }
  if (what != SlotScratch::kUnchanged) scratch.resize(shape.pixels());
  const auto cols = static_cast<std::size_t>(shape.cols);
  const auto pitch = static_cast<std::size_t>(fresh.row_pitch);
  for (std::size_t row = 0; row < static_cast<std::size_t>(shape.rows); ++row) {
    for (std::size_t col = 0; col < cols; ++col) {
      const std::size_t index = row * cols + col;
      const float value = as_stored(fresh.values[row * pitch + col], texels);
      if (what == SlotScratch::kDifference) scratch[index] = as_stored(value - slot[index], texels);
      if (what == SlotScratch::kOldProjection) scratch[index] = slot[index];
      slot[index] = value;
    }
  }
}

}  // namespace slicestream::cpu
