// CGLS (conjugate gradients on the normal equations A^T A x = A^T b, paper Alg. 1) for several
// independent right-hand sides at once (one per slice), with every vector update and dot product
// a fused expression pass (kernels/solvers/cgls_steps.hpp, on kernels/expr). A column stops
// early when its relative residual ||A x - b|| / ||b|| reaches the tolerance; the solve stops when
// all have.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "kernels/solvers/cgls_workspace.hpp"
#include "kernels/solvers/projection_operator.hpp"

namespace slicestream::solvers {

struct CglsOptions {
  int max_iterations = 20;
  double relative_tolerance = 0;  // per column, on ||A x - b|| / ||b||; 0 runs all iterations
  // Relaxed product precision (inexact Krylov): the start's products and the first
  // `accurate_iterations` iterations use the operator's accurate products, the later ones its fast
  // ones (ProjectionOperator::set_fast_products; e.g. fp16 instead of compensated Tensor Core
  // operands). The rounding of the early products is what CG amplifies; later ones may be coarse
  // (docs/performance.md, "CG with an accurate start"). 0: only the start's products accurate;
  // the default keeps every product accurate; negative is refused.
  int accurate_iterations = std::numeric_limits<int>::max();
};

struct CglsReport {
  int iterations = 0;  // iterations run (the slowest column)
  // relative_residual[k][c]: ||A x - b|| / ||b|| of column c after k iterations (k = 0: start).
  std::vector<std::vector<double>> relative_residual;
  std::vector<int> column_iterations;  // iterations each column ran before it stopped
};

// ||A x - b|| / ||b|| of one column from a computed A x (||A x|| when b is zero): the number
// CglsReport::relative_residual holds, for a single product outside a solve.
double relative_residual(const float* ax, const float* b, std::size_t count);

// b: rays x columns; x: pixels x columns, the start value on entry (e.g. zeros or an FBP), the
// solution on return. The vectors come from `workspace` (grown when the problem needs it; a fresh
// CglsWorkspace for a one-off solve).
CglsReport cgls_cpu(ProjectionOperator& op, const float* b, float* x, int columns,
                    const CglsOptions& options, CglsWorkspace& workspace);

}  // namespace slicestream::solvers
