#include "kernels/solvers/cgls_workspace.hpp"

#include <algorithm>

namespace slicestream::solvers {
namespace {

std::size_t count(long long n) {
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

// Elements of each kind of vector for `size` (both twins hold the same vectors).
struct VectorElements {
  std::size_t rays;     // r, q
  std::size_t pixels;   // s, p, t
  std::size_t columns;  // one scalar per column
};

VectorElements elements(const CglsSize& size) {
  const std::size_t columns = count(size.columns);
  return {count(size.rays) * columns, count(size.pixels) * columns, columns};
}

}  // namespace

bool CglsSize::fits_in(const CglsSize& capacity) const {
  return rays <= capacity.rays && pixels <= capacity.pixels && columns <= capacity.columns &&
         max_iterations <= capacity.max_iterations;
}

CglsSize CglsSize::covering(const CglsSize& other) const {
  return {std::max(rays, other.rays), std::max(pixels, other.pixels),
          std::max(columns, other.columns), std::max(max_iterations, other.max_iterations)};
}

std::size_t cgls_workspace_bytes(const CglsSize& size) {
  const VectorElements e = elements(size);
  // r, q, s, p, t, alpha, beta as floats; b_norm2, r_norm2, start (x2), delta, gamma_next and
  // p_max as doubles.
  return (2 * e.rays + 3 * e.pixels + 2 * e.columns) * sizeof(float) +
         7 * e.columns * sizeof(double);
}

std::size_t cgls_gpu_workspace_bytes(const CglsSize& size) {
  const VectorElements e = elements(size);
  const std::size_t history = (count(size.max_iterations) + 1) * e.columns;
  // r, q, s, p, t, alpha, beta, p_max as floats; b_norm2, start (x2), delta, gamma_next, p_max
  // and the residual history as doubles; active and step counts as ints.
  return (2 * e.rays + 3 * e.pixels + 3 * e.columns) * sizeof(float) +
         (6 * e.columns + history) * sizeof(double) + 2 * e.columns * sizeof(int);
}

void CglsWorkspace::reserve(const CglsSize& size) {
  if (size.fits_in(capacity_)) return;
  capacity_ = capacity_.covering(size);
  const VectorElements e = elements(capacity_);
  for (std::vector<float>* v : {&r, &q})
    v->resize(e.rays);
  for (std::vector<float>* v : {&s, &p, &t})
    v->resize(e.pixels);
  for (std::vector<float>* v : {&alpha, &beta})
    v->resize(e.columns);
  for (std::vector<double>* v : {&b_norm2, &r_norm2, &delta, &gamma_next, &p_max})
    v->resize(e.columns);
  start.resize(2 * e.columns);
}

}  // namespace slicestream::solvers
