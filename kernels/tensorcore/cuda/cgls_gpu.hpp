// CGLS on the GPU over a DeviceProjectionOperator: the algorithm of kernels/tensorcore/cgls.hpp
// (the CPU twin) with the same fused expression passes and scalar recurrences (cgls_steps.hpp),
// each pass one kernel (cuda::evaluate_pass, kernels/cuda/expr_device_evaluate.cuh), the
// per-column scalars computed on the device. Without a tolerance the solve never waits for the
// host; with one it reads the residuals once per iteration to stop converged columns.
#pragma once

#include <cuda_runtime.h>

#include "kernels/tensorcore/cgls.hpp"
#include "kernels/tensorcore/cuda/device_projection_operator.hpp"

namespace slicestream::tensorcore::cuda {

// b: rays x columns and x: pixels x columns in device memory; x holds the start value on entry.
CglsReport cgls_gpu(DeviceProjectionOperator& op, const float* b, float* x, int columns,
                    const CglsOptions& options, cudaStream_t stream);

}  // namespace slicestream::tensorcore::cuda
