// CPU twin of the ramp filter: zero-padded row FFTs with FFTW (single precision).
#pragma once

#include <memory>

#include "kernels/filter_config.hpp"
#include "kernels/frame_view.hpp"

namespace slicestream::cpu {

// Owns the FFTW plans (created once; planning is not thread-safe) and one scratch buffer per
// worker, so that `filter_rows` may run concurrently for different workers.
class RampFilter {
 public:
  RampFilter(DetectorShape shape, const FilterConfig& config, int workers);
  ~RampFilter();
  RampFilter(const RampFilter&) = delete;
  RampFilter& operator=(const RampFilter&) = delete;

  // Filters rows [row_begin, row_end) of `projection` (rows x cols floats) in place, in pixel
  // units (the physical 1/pixel-width scale is ProjectionMap::weight). `worker` < workers.
  void filter_rows(float* projection, int row_begin, int row_end, int worker) const;

  DetectorShape shape() const;
  int padded_width() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace slicestream::cpu
