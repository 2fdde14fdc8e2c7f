#include "pipeline/refinement/sinogram_window.hpp"

#include <algorithm>

namespace slicestream {
namespace {

// Index of `row` in the captured rows, or -1.
int find_row(const CapturedRows& captured, int row) {
  const auto it = std::lower_bound(captured.rows.begin(), captured.rows.end(), row);
  if (it == captured.rows.end() || *it != row) return -1;
  return static_cast<int>(it - captured.rows.begin());
}

}  // namespace

void SinogramWindow::reset(int slots, int bins) {
  bins_ = std::max(bins, 0);
  values_.assign(static_cast<std::size_t>(std::max(slots, 0)) * static_cast<std::size_t>(bins_),
                 0.0f);
  filled_.assign(static_cast<std::size_t>(std::max(slots, 0)), false);
  filled_count_ = 0;
  ++version_;
}

bool SinogramWindow::store(int slot, const RefinementPlan& plan, const CapturedRows& captured,
                           const CosineWeight& preweight) {
  if (slot < 0 || slot >= slots()) return false;
  const std::size_t cols = static_cast<std::size_t>(bins_);
  const int low = find_row(captured, plan.row_low);
  const int high = find_row(captured, plan.row_high);
  if (low < 0 || high < 0 || captured.values.size() != captured.rows.size() * cols) {
    clear_slot(slot);
    return false;
  }
  const float* a = captured.values.data() + static_cast<std::size_t>(low) * cols;
  const float* b = captured.values.data() + static_cast<std::size_t>(high) * cols;
  const float w = plan.weight_high;
  float* out = values_.data() + static_cast<std::size_t>(slot) * cols;
  if (preweight.enabled) {
    for (std::size_t i = 0; i < cols; ++i) {
      const int col = static_cast<int>(i);
      out[i] = (1.0f - w) * a[i] / preweight.at(plan.row_low, col) +
               w * b[i] / preweight.at(plan.row_high, col);
    }
  } else {
    for (std::size_t i = 0; i < cols; ++i)
      out[i] = (1.0f - w) * a[i] + w * b[i];
  }
  if (!filled_[static_cast<std::size_t>(slot)]) {
    filled_[static_cast<std::size_t>(slot)] = true;
    ++filled_count_;
  }
  ++version_;
  return true;
}

void SinogramWindow::clear_slot(int slot) {
  if (slot < 0 || slot >= slots() || !filled_[static_cast<std::size_t>(slot)]) return;
  filled_[static_cast<std::size_t>(slot)] = false;
  --filled_count_;
  ++version_;
}

}  // namespace slicestream
