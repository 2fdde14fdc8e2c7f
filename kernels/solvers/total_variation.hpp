// The gradient of the smoothed (isotropic) total variation of an image,
//   TV_eps(x) = sum_p sqrt(dx_p^2 + dy_p^2 + eps^2),
// with forward differences dx_p = x(p + 1) - x(p), dy_p = x(p + width) - x(p) (0 across the
// image's right and top edges: Neumann boundaries), as an expression generator, so that a solver
// adds it to its gradient in one fused pass on the host (expr::evaluate_pass) or on the device
// (cuda::evaluate_pass) from this one definition. The smoothing eps keeps the gradient Lipschitz
// (constant 8 / eps: |grad|^2 <= 8 for forward differences) where plain TV has none.
//
// Images are pixels x columns, row-major (pixel p of column c at p * columns + c), pixel
// p = row * width + col with row 0 at the bottom, as ImageGrid2d and the solvers lay them out.
#pragma once

#include <cmath>

#include "kernels/expr/expression.hpp"
#include "kernels/host_device.hpp"

namespace slicestream::solvers {

// weight[c] * d TV_eps(x) / d x at (pixel, column c), eps = epsilon[c] (one weight and one
// smoothing per column: each column is its own image).
struct TotalVariationGradient {
  const float* x;
  const float* weight;
  const float* epsilon;
  int width = 0;
  int height = 0;
  int columns = 1;

  SLICESTREAM_INLINE float value(int row, int col, int c) const {
    return x[(static_cast<long long>(row) * width + col) * columns + c];
  }
  // The forward differences at (row, col) divided by their smoothed magnitude.
  SLICESTREAM_INLINE void normalised_differences(int row, int col, int c, float eps2, float* nx,
                                                 float* ny) const {
    const float here = value(row, col, c);
    const float dx = col + 1 < width ? value(row, col + 1, c) - here : 0.0f;
    const float dy = row + 1 < height ? value(row + 1, col, c) - here : 0.0f;
    const float inverse = 1.0f / sqrtf(dx * dx + dy * dy + eps2);
    *nx = dx * inverse;
    *ny = dy * inverse;
  }
  SLICESTREAM_INLINE float at(int pixel, int c) const {
    const float w = weight[c];
    if (w == 0.0f) return 0.0f;
    const float eps = epsilon[c];
    const float eps2 = eps * eps;
    const int row = pixel / width;
    const int col = pixel - row * width;
    float nx = 0, ny = 0;
    normalised_differences(row, col, c, eps2, &nx, &ny);
    float g = -(nx + ny);  // x(p) enters both of its own differences with -1
    if (col > 0) {         // ... and the left neighbour's dx with +1
      float lx = 0, ly = 0;
      normalised_differences(row, col - 1, c, eps2, &lx, &ly);
      g += lx;
    }
    if (row > 0) {  // ... and the lower neighbour's dy with +1
      float bx = 0, by = 0;
      normalised_differences(row - 1, col, c, eps2, &bx, &by);
      g += by;
    }
    return w * g;
  }
};

SLICESTREAM_INLINE expr::Generator<TotalVariationGradient> total_variation_gradient(
    const TotalVariationGradient& gradient) {
  return {gradient};
}

// TV_eps of column c of x, in double (tests and reports; the solvers need only the gradient).
inline double total_variation(const float* x, int width, int height, int columns, int c,
                              double epsilon) {
  double sum = 0;
  for (int row = 0; row < height; ++row) {
    for (int col = 0; col < width; ++col) {
      auto at = [&](int r, int k) {
        return static_cast<double>(x[(static_cast<long long>(r) * width + k) * columns + c]);
      };
      const double here = at(row, col);
      const double dx = col + 1 < width ? at(row, col + 1) - here : 0.0;
      const double dy = row + 1 < height ? at(row + 1, col) - here : 0.0;
      sum += std::sqrt(dx * dx + dy * dy + epsilon * epsilon);
    }
  }
  return sum;
}

}  // namespace slicestream::solvers
