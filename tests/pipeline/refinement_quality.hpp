// How close FBP and refined slices come to the object: one scan of the 3D Shepp-Logan phantom
// (exact line integrals, as raw counts with or without Poisson noise) through the whole
// in-process pipeline (CPU backend), one axial slice at the box's centre (parallel beam) or the
// central slice (cone beam) refined once at the end, and the errors of both images against the
// phantom's pixel averages. Shared by refinement_quality_test (small cases, the rule that
// refinement never makes a slice worse) and bench/refinement (docs/refinement.md's table).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/messages/command.hpp"
#include "pipeline/messages/publish_sink.hpp"

namespace slicestream::test {

struct QualityCase {
  bool cone = false;  // cone beam (360 degrees, magnification 1.5) or parallel (180 degrees)
  int views = 30;
  int size = 64;  // detector columns and slice pixels per side
  // Open-beam counts per pixel: Poisson noise at this level; 0: noiseless (exact counts of a
  // 10^6 open beam).
  double flat_counts = 0;
  std::uint32_t seed = 1;
};
std::string describe(const QualityCase& c);  // "parallel, 30 views, 64 px, 2000 counts"

struct ErrorMeasures {
  double relative_l2 = 0;  // ||x - truth|| / ||truth||
  double rmse = 0;         // per pixel, attenuation per mm
};
ErrorMeasures measure(const SliceValues& values, const std::vector<float>& truth);

struct QualityOutcome {
  ErrorMeasures fbp;
  ErrorMeasures refined;
  RefinedSliceImage refinement;  // residuals, iterations, summary (values: the refined image)
  bool ok = false;               // false: no refined image came (error says why)
  std::string error;
};

// Scans `c`, refines its slice with `iterations` and `settings` and measures both images.
QualityOutcome run_quality_case(const QualityCase& c, int iterations,
                                const RefinementSettings& settings);

}  // namespace slicestream::test
