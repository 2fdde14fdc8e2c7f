// The noise level of the discrepancy stop (refinement_noise.hpp) against Monte Carlo: Poisson
// counts under an open beam give line integrals whose spread the formula predicts, for one row and
// for a blend of two rows; flats that are not counts, or none, leave it unknown.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "pipeline/refinement/refinement_noise.hpp"

namespace slicestream {
namespace {

// ||b_noisy - b|| / ||b|| over many Poisson draws of a two-row detector of `cols` columns.
double measured_noise(const std::vector<double>& integrals, const std::vector<double>& open_low,
                      const std::vector<double>& open_high, double weight_high, int draws) {
  std::mt19937 rng(11);
  double diff2 = 0, norm2 = 0;
  const std::size_t cols = open_low.size();
  for (int d = 0; d < draws; ++d) {
    for (std::size_t i = 0; i < integrals.size(); ++i) {
      const std::size_t col = i % cols;
      auto measured = [&](double open) {
        const double counts = static_cast<double>(
            std::poisson_distribution<long long>(open * std::exp(-integrals[i]))(rng));
        return -std::log(std::max(counts, 0.5) / open);
      };
      const double b =
          (1 - weight_high) * measured(open_low[col]) + weight_high * measured(open_high[col]);
      diff2 += (b - integrals[i]) * (b - integrals[i]);
      norm2 += integrals[i] * integrals[i];
    }
  }
  return std::sqrt(diff2 / norm2);
}

TEST(RefinementNoise, PredictsThePoissonSpreadOfTheLineIntegrals) {
  const int rows = 3, cols = 16, angles = 20;
  std::vector<double> integrals(static_cast<std::size_t>(angles * cols));
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> uniform(0.2, 2.5);
  for (double& p : integrals)
    p = uniform(rng);
  // Open beams differ per row and column; the dark is subtracted.
  std::vector<float> dark(static_cast<std::size_t>(rows * cols), 100.0f), flat(dark.size());
  std::vector<double> open_row1(cols), open_row2(cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const double open = 500.0 + 300.0 * r + 40.0 * c;
      flat[static_cast<std::size_t>(r * cols + c)] = static_cast<float>(100.0 + open);
      if (r == 1) open_row1[static_cast<std::size_t>(c)] = open;
      if (r == 2) open_row2[static_cast<std::size_t>(c)] = open;
    }
  }
  OpenBeamCounts counts;
  counts.set(dark, flat, rows, cols);
  ASSERT_TRUE(counts.known());
  const std::vector<float> sinogram(integrals.begin(), integrals.end());
  for (const float w : {0.0f, 0.3f, 0.5f}) {
    const double predicted = counts.relative_noise(sinogram, 1, 2, w);
    const double measured = measured_noise(integrals, open_row1, open_row2, w, 400);
    EXPECT_NEAR(predicted, measured, 0.03 * measured) << "weight " << w;
  }
}

TEST(RefinementNoise, UnknownWithoutCounts) {
  const int rows = 2, cols = 4;
  const std::vector<float> sinogram(8, 1.0f);
  OpenBeamCounts counts;
  EXPECT_LT(counts.relative_noise(sinogram, 0, 0, 0), 0) << "no calibration yet";
  counts.set({}, {}, rows, cols);
  EXPECT_FALSE(counts.known()) << "no flats";
  counts.set({}, std::vector<float>(8, 1.0f), rows, cols);
  EXPECT_FALSE(counts.known()) << "normalised flats are not counts";
  counts.set({}, std::vector<float>(7, 1000.0f), rows, cols);
  EXPECT_FALSE(counts.known()) << "a flat of the wrong size";
  counts.set({}, std::vector<float>(8, 1000.0f), rows, cols);
  ASSERT_TRUE(counts.known()) << "no darks: the flat itself";
  EXPECT_NEAR(counts.relative_noise(sinogram, 0, 0, 0), std::sqrt(std::exp(1.0) / 1000.0), 1e-6);
  EXPECT_LT(counts.relative_noise(sinogram, 0, 2, 0), 0) << "a row outside the detector";
  counts.clear();
  EXPECT_FALSE(counts.known());
}

}  // namespace
}  // namespace slicestream
