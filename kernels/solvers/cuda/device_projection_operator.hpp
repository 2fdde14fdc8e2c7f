// A projector on the GPU as a linear operator with several right-hand sides, on device memory:
// images pixels x columns and sinograms rays x columns, fp32, row-major (as ProjectionOperator).
// `max_abs` (optional, device, one float per column) is the largest magnitude of each input
// column when the caller knows it already (CGLS computes it in its fused update passes); fp16
// operands are scaled by it. Without it the operator reduces the input itself.
#pragma once

#include <cuda_runtime.h>

namespace slicestream::solvers::cuda {

class DeviceProjectionOperator {
 public:
  virtual ~DeviceProjectionOperator() = default;
  virtual long long rays() const = 0;
  virtual long long pixels() const = 0;
  virtual void forward(const float* image, float* sinogram, int columns, cudaStream_t stream,
                       const float* max_abs = nullptr) = 0;
  virtual void backward(const float* sinogram, float* image, int columns, cudaStream_t stream,
                        const float* max_abs = nullptr) = 0;
  // As ProjectionOperator::set_fast_products (kernels/solvers/projection_operator.hpp); takes
  // effect from the next call.
  virtual void set_fast_products(bool /*fast*/) {}
};

}  // namespace slicestream::solvers::cuda
