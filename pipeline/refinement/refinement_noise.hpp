// The noise level of a slice's sinogram that the detector's counts imply, for the discrepancy
// stop of refinement (refinement_settings.hpp). A projection value is b = -log((I - D) / (F - D))
// with I the measured counts, D the dark and F the flat (averaged over the calibration frames).
// With Poisson counts, I - D ~ N0 exp(-b) with N0 = F - D, so Var(b) ~ 1 / (N0 exp(-b)) =
// exp(b) / N0 per ray. A slice between two detector rows fits (1 - w) b_low + w b_high, whose
// variance is exp(b) ((1 - w)^2 / N0_low + w^2 / N0_high) (b of both rows taken as the
// interpolated one). The level reported is sqrt(sum Var(b)) / ||b||: the relative residual
// ||A x - b|| / ||b|| that an image explaining the data as well as the noise allows would have.
//
// Neglected: the noise of the averaged dark and flat fields, and a detector gain other than one
// count per photon (a camera with several counts per photon looks less noisy than it is, so the
// stop comes later, never earlier). Without flats, or with flats that do not look like counts
// (a mean open beam below kMinOpenBeamCounts, e.g. normalised float data), the level is unknown.
#pragma once

#include <vector>

namespace slicestream {

constexpr double kMinOpenBeamCounts = 20;

class OpenBeamCounts {
 public:
  // From the scan's averaged dark and flat frames (rows x cols; dark may be empty: zero).
  void set(const std::vector<float>& dark, const std::vector<float>& flat, int rows, int cols);
  void clear();
  bool known() const { return !counts_.empty(); }

  // Relative noise level of a sinogram (angles x cols, the line integrals) of the rows
  // row_low / row_high blended with weight_high; < 0 when the counts are unknown.
  double relative_noise(const std::vector<float>& sinogram, int row_low, int row_high,
                        float weight_high) const;

 private:
  std::vector<float> counts_;  // F - D per pixel, rows x cols; empty: unknown
  int rows_ = 0;
  int cols_ = 0;
};

}  // namespace slicestream
