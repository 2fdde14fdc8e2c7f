#include "pipeline/refinement/refinement_noise.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace slicestream {

void OpenBeamCounts::set(const std::vector<float>& dark, const std::vector<float>& flat, int rows,
                         int cols) {
  clear();
  const std::size_t pixels = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  if (rows <= 0 || cols <= 0 || flat.size() != pixels) return;
  if (!dark.empty() && dark.size() != pixels) return;
  std::vector<float> counts(pixels);
  double sum = 0;
  for (std::size_t i = 0; i < pixels; ++i) {
    counts[i] = flat[i] - (dark.empty() ? 0.0f : dark[i]);
    if (std::isfinite(counts[i])) sum += counts[i];
  }
  if (!(sum / static_cast<double>(pixels) >= kMinOpenBeamCounts)) return;
  counts_ = std::move(counts);
  rows_ = rows;
  cols_ = cols;
}

void OpenBeamCounts::clear() {
  counts_.clear();
  rows_ = cols_ = 0;
}

double OpenBeamCounts::relative_noise(const std::vector<float>& sinogram, int row_low, int row_high,
                                      float weight_high) const {
  if (!known() || row_low < 0 || row_high >= rows_ || sinogram.empty() ||
      sinogram.size() % static_cast<std::size_t>(cols_) != 0) {
    return -1;
  }
  const double w = weight_high;
  // Below one count a pixel carries no information; it counts as one (the largest variance).
  auto inverse_counts = [&](int row, int col) {
    const float n = counts_[static_cast<std::size_t>(row) * static_cast<std::size_t>(cols_) +
                            static_cast<std::size_t>(col)];
    return 1.0 / std::max(1.0, std::isfinite(n) ? static_cast<double>(n) : 1.0);
  };
  std::vector<double> per_column(static_cast<std::size_t>(cols_));
  for (int col = 0; col < cols_; ++col) {
    per_column[static_cast<std::size_t>(col)] =
        (1 - w) * (1 - w) * inverse_counts(row_low, col) + w * w * inverse_counts(row_high, col);
  }
  double variance = 0, norm2 = 0;
  for (std::size_t i = 0; i < sinogram.size(); ++i) {
    const double b = sinogram[i];
    variance += std::exp(std::min(b, 50.0)) * per_column[i % static_cast<std::size_t>(cols_)];
    norm2 += b * b;
  }
  return norm2 > 0 ? std::sqrt(variance / norm2) : -1;
}

}  // namespace slicestream
