// What a slice refiner's system matrix depends on: the 2D problem of one axial slice of a
// parallel-beam scan, or of the central slice of a cone-beam scan (a fan beam;
// pipeline/refinement_plan.hpp builds both), i.e. the window's projections in the slice's own
// frame and the slice's pixel grid. Equal setups give equal matrices, so the
// refinement worker rebuilds a matrix only when the setup changes (angles, detector offset,
// rotation-axis offset, slice position or size).
#pragma once

#include <cstddef>

#include "kernels/tensorcore/geometry_2d.hpp"

namespace slicestream {

struct RefinementSetup {
  tensorcore::Geometry2d geometry;  // one projection per window slot, bins = detector columns
  tensorcore::ImageGrid2d grid;     // the slice: width x height square pixels, row 0 at the bottom
};

bool operator==(const RefinementSetup& a, const RefinementSetup& b);
inline bool operator!=(const RefinementSetup& a, const RefinementSetup& b) {
  return !(a == b);
}

// Non-zeros of the distance-driven matrix, estimated before building it: every pixel meets
// 1 + (pixel / bin) (|cos| + |sin|) bins per projection on average, (|cos| + |sin|) averaging
// 4 / pi over the angles, a fan's bins taken at the slice centre; an upper bound for pixels
// outside the detector's view.
double estimated_matrix_nonzeros(const RefinementSetup& setup);
// fp32 CSR storage of that estimate (value + column index per non-zero).
std::size_t estimated_matrix_bytes(const RefinementSetup& setup);

// Everything a slice refiner holds, estimated from the setup before its matrix is built (the
// backends' memory budgets count it; refiners charge their real size while they live).
// CPU (cpu_slice_refiner.*): the fp32 CSR matrix with its row pointers, the CGLS and FISTA
// workspaces of one slice and one sinogram for residuals.
std::size_t estimated_cpu_refiner_bytes(const RefinementSetup& setup);
// CUDA (cuda_backend/cuda_slice_refiner.*), device memory: the Tensor Core matrix (taken as the
// fp32 CSR estimate: fp16 blocks at least a quarter full; checked again once built), the
// projector's index maps and operand work space for one slice (kCudaOperandBytesPerRay /
// PerPixel, an allowance the GPU tests check), the GPU CGLS workspace of one slice for
// kCudaRefinerIterations iterations, the GPU FISTA workspace of one slice and the refiner's
// sinogram, A x and image vectors.
constexpr std::size_t kCudaOperandBytesPerRay = 96;
constexpr std::size_t kCudaOperandBytesPerPixel = 64;
constexpr int kCudaRefinerIterations = 200;  // the residual history grows beyond (8 B each)
std::size_t estimated_cuda_refiner_bytes(const RefinementSetup& setup);

// Threads a refiner's system-matrix build may use: half the machine (at least one), because
// builds run beside a live scan (automatic residual checks are on by default) and the
// reconstruction's workers must keep up with the detector meanwhile.
int refiner_build_threads();

}  // namespace slicestream
