// What the fused preprocessing pass needs besides the raw frame (CPU and CUDA share it).
#pragma once

#include <cstdint>

namespace slicestream {

struct PreprocessParams {
  // The detector already delivers line integrals: skip flat-field correction and -log.
  bool already_linear = false;
  // Transmissions below this (including zero and negative ones from noise) are clamped before
  // -log so that one bad pixel cannot produce an infinite attenuation.
  float min_transmission = 1e-6f;
};

// Counts of guarded pixels in one frame; the pipeline reports them in its metrics.
struct PreprocessCounters {
  std::uint64_t clamped_low = 0;  // transmission <= min_transmission (incl. non-positive)
  std::uint64_t non_finite = 0;   // NaN or infinite input or result, replaced by 0
};

}  // namespace slicestream
