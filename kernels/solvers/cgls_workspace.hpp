// The vectors one CGLS solve works in (kernels/solvers/cgls.hpp), kept between solves so that
// repeated solves (a slice refined every second) do not allocate: per column r and q over the
// rays, s, p and t over the pixels, and per-column scalars; the GPU solver also keeps the squared
// residual of every iteration (max_iterations + 1 per column) on the device. A workspace grows to
// the largest problem it served and never shrinks.
//
// CglsWorkspace is the CPU twin's; cuda::CglsWorkspaceGpu (kernels/solvers/cuda/cgls_gpu.hpp)
// the GPU's, with the same interface. Their sizes are plain arithmetic here, so that memory
// budgets can count them before anything is allocated (and without a GPU).
#pragma once

#include <cstddef>
#include <vector>

namespace slicestream::solvers {

struct CglsSize {
  long long rays = 0;
  long long pixels = 0;
  int columns = 1;
  int max_iterations = 0;
  // Whether a workspace of `capacity` serves this problem (every dimension within it).
  bool fits_in(const CglsSize& capacity) const;
  // The smallest size both fit in.
  CglsSize covering(const CglsSize& other) const;
};

// Bytes of CglsWorkspace / cuda::CglsWorkspaceGpu of capacity `size`.
std::size_t cgls_workspace_bytes(const CglsSize& size);
std::size_t cgls_gpu_workspace_bytes(const CglsSize& size);

class CglsWorkspace {
 public:
  // Grows the vectors to serve `size` (keeps them when they already do).
  void reserve(const CglsSize& size);
  const CglsSize& capacity() const { return capacity_; }
  std::size_t bytes() const { return cgls_workspace_bytes(capacity_); }

  // The vectors, sized by reserve() and written only by cgls_cpu (cgls.cpp): r, q rays x
  // columns; s, p, t pixels x columns; the rest per column.
  std::vector<float> r, q, s, p, t, alpha, beta;
  // b_norm2, r_norm2, start (2 per column: |s|^2 then max |s|), delta, gamma_next, p_max.
  std::vector<double> b_norm2, r_norm2, start, delta, gamma_next, p_max;

 private:
  CglsSize capacity_{0, 0, 0, 0};
};

}  // namespace slicestream::solvers
