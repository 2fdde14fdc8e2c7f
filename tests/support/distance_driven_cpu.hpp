// The matrix-free distance-driven projector (kernels/tensorcore/distance_driven.hpp) on the CPU,
// in parallel over projections: the reference the sparse matrix is checked against. Images are
// row-major width x height; sinograms are projection-major (row = projection * bins + bin).
#pragma once

#include "kernels/executor.hpp"
#include "kernels/tensorcore/distance_driven.hpp"

namespace slicestream::tensorcore {

void dd_forward_cpu(Executor& executor, const Geometry2d& geometry, const ImageGrid2d& grid,
                    const float* image, float* sinogram);
void dd_backward_cpu(Executor& executor, const Geometry2d& geometry, const ImageGrid2d& grid,
                     const float* sinogram, float* image);

}  // namespace slicestream::tensorcore
