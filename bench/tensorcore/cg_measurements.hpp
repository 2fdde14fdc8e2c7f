// CG measurements of the Tensor Core benchmark: the error of a solve of scaled phantom slices
// against the truth, and the time of one CG iteration per image.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <vector>

#include "kernels/solvers/cuda/device_projection_operator.hpp"
#include "kernels/tensorcore/cuda/tensorcore_projector.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"

namespace slicestream::tensorcore::bench {

// The sinogram rows (rays x slices) of `slices` copies of `data`, slice s scaled by
// slice_scale(s) so that the slices differ.
std::vector<float> scaled_slices(const std::vector<float>& data, int slices);

// The worst relative error over the slices of one `iterations`-step CGLS solve from zero of
// `slices` slices at once (scaled_slices of the phantom data; one slice: the problem itself). The
// gathered symmetric products only run from 16 slices on.
double cg_error_slices(solvers::cuda::DeviceProjectionOperator& op, const std::vector<float>& data,
                       int slices, const std::vector<float>& truth, int iterations,
                       cudaStream_t stream);

// cg_error_slices through a Tensor Core projector of `matrix` with `options`, with fp16 ([0]),
// compensated ([1]) and forward-only compensated ([2]) operands.
std::array<double, 3> cg_errors_by_operands(const std::shared_ptr<const TensorCoreMatrix>& matrix,
                                            cuda::TensorCoreProjectorOptions options,
                                            const std::vector<float>& data, int slices,
                                            const std::vector<float>& truth, int iterations,
                                            cudaStream_t stream);

// Per image per CG iteration (ms): the difference of two solves cancels the set-up.
double cg_iteration_ms(solvers::cuda::DeviceProjectionOperator& op, const float* b, int slices,
                       int iterations, cudaStream_t stream);

}  // namespace slicestream::tensorcore::bench
