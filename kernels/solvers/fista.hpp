// Regularised, bounded least squares for several slices at once (one column per slice):
//
//   minimise  1/2 ||A x - b||^2 + R(x)   subject to  x >= 0 (when non_negative),
//
// by FISTA (Beck and Teboulle 2009: accelerated projected gradient) with gradient-based adaptive
// restart of the momentum (O'Donoghue and Candes 2015), started from a given image (e.g. the
// FBP slice). R is one of
//   Tikhonov:         R(x) = w L / 2 ||x||^2
//   total variation:  R(x) = w L s TV_eps(x),  eps = kTvSmoothing s   (total_variation.hpp)
// where L = ||A||^2 (a power-iteration estimate, kept by the caller between solves of one
// matrix) and s = max(x0, 0), the start image's largest value, per column. Both make the weight w
// dimensionless: the same w means the same balance for any pixel size, number of projections or
// attenuation scale. The step is 1 / (L (1 + w)) (Tikhonov) or 1 / (L (1 + 8 w / kTvSmoothing))
// (TV), the inverse Lipschitz constant of the smooth part.
//
// A column stops early when its relative data residual ||A x - b|| / ||b|| reaches
// `relative_tolerance` (the discrepancy principle when the caller sets it to the noise level),
// or when an iteration no longer changes it (kConverged); the solve stops when all have.
//
// The iteration is written once (fista_iterations.hpp) over the expression layer and runs on the
// host (fista_cpu, here) and on the device (cuda/fista_gpu.hpp) alike.
#pragma once

#include <string>
#include <vector>

#include "kernels/solvers/cgls_workspace.hpp"
#include "kernels/solvers/projection_operator.hpp"

namespace slicestream::solvers {

enum class Regularizer { kNone, kTikhonov, kTotalVariation };

// The TV smoothing eps relative to the image scale s: differences well below 1 % of the image's
// range are smoothed like a quadratic, larger ones (edges) cost their magnitude.
constexpr double kTvSmoothing = 0.01;
// Safety factor on the power-iteration estimate of ||A||^2, which approaches it from below.
constexpr double kLipschitzMargin = 1.05;
constexpr int kPowerIterations = 20;

// Why a column stopped.
enum class StopReason { kMaxIterations, kDiscrepancy, kConverged };

struct FistaOptions {
  int max_iterations = 50;
  double relative_tolerance = 0;  // per column, on ||A x - b|| / ||b||; 0 runs all iterations
  bool non_negative = true;
  Regularizer regularizer = Regularizer::kTotalVariation;
  double weight = 0;  // w above (>= 0)
  // ||A||^2 when known (e.g. from an earlier solve with the same matrix); <= 0: estimated here.
  double lipschitz = 0;
  // The image's shape (TV's neighbours): width x height = op.pixels().
  int image_width = 0;
  int image_height = 0;
};

struct FistaReport {
  int iterations = 0;  // iterations run (the slowest column)
  // relative_residual[k][c]: ||A x - b|| / ||b|| of column c after k iterations (k = 0: of the
  // start image as given, before any projection onto x >= 0).
  std::vector<std::vector<double>> relative_residual;
  std::vector<int> column_iterations;
  std::vector<StopReason> stop;            // per column
  double lipschitz = 0;                    // the ||A||^2 used (estimated or given)
  std::vector<double> regularizer_weight;  // per column: w L (Tikhonov) or w L s (TV), absolute
  std::vector<double> tv_epsilon;          // per column (TV)
};

// The host vectors of one FISTA solve, kept between solves like CglsWorkspace: r, ax, ax_next
// over the rays, y, z, g over the pixels (each x columns), per-column scalars.
class FistaWorkspace {
 public:
  void reserve(const CglsSize& size);
  const CglsSize& capacity() const { return capacity_; }
  std::size_t bytes() const;
  std::vector<float> r, ax, ax_next, y, z, g;
  std::vector<float> step, beta, active, tikhonov, tv_weight, tv_epsilon;

 private:
  CglsSize capacity_{0, 0, 0, 0};
};

// Bytes of FistaWorkspace / cuda::FistaWorkspaceGpu of capacity `size` (budgets count them
// before allocating).
std::size_t fista_workspace_bytes(const CglsSize& size);

// b: rays x columns; x: pixels x columns, the start image on entry, the solution on return.
// Throws std::invalid_argument for inconsistent options.
FistaReport fista_cpu(ProjectionOperator& op, const float* b, float* x, int columns,
                      const FistaOptions& options, FistaWorkspace& workspace);

// Throws std::invalid_argument when the options do not fit the operator (`columns` included).
void validate_fista(const FistaOptions& options, long long pixels, int columns);

}  // namespace slicestream::solvers
