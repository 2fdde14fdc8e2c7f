// Helpers shared by the Tensor Core and solver tests: the worker pool the kernels run on, fresh
// random inputs, norms, small standard geometries.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/tensorcore/geometry_2d.hpp"
#include "pipeline/backend/cpu/worker_pool.hpp"
#include "tests/support/ellipse_phantom_2d.hpp"

namespace slicestream::tensorcore::testing {

inline constexpr double kPi = 3.14159265358979323846;

// The threads every test of a binary hands the kernels (all hardware threads).
inline WorkerPool& pool() {
  static WorkerPool workers(0);
  return workers;
}

inline std::vector<float> random_vector(std::size_t n, std::uint32_t seed, float lo = -1,
                                        float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v)
    x = dist(rng);
  return v;
}

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a[i]) * b[i];
  return s;
}

inline double norm(const std::vector<float>& a) {
  return std::sqrt(dot(a, a));
}

// ||x - ref|| / ||ref||
using ::slicestream::tensorcore::relative_error;

// A small parallel-beam problem with the paper's proportions (detector as wide as the image).
inline Geometry2d small_parallel(int angles, int bins, double width_mm, double offset_mm = 0,
                                 double span = kPi) {
  return make_parallel_2d(uniform_angles(angles, span), bins, width_mm / bins, offset_mm);
}

inline Geometry2d small_fan(int angles, int bins, double width_mm, double offset_mm = 0) {
  // Source at 3 image widths, detector at 1.5: magnification 1.5, fan covering the image.
  return make_fan_2d(uniform_angles(angles, 2 * kPi), bins, 1.5 * width_mm * 1.5 / bins,
                     3 * width_mm, 1.5 * width_mm, offset_mm);
}

}  // namespace slicestream::tensorcore::testing
