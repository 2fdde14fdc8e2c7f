// CGLS on the GPU over a DeviceProjectionOperator: the algorithm of kernels/solvers/cgls.hpp
// (the CPU twin) with the same fused expression passes and scalar recurrences (cgls_steps.hpp),
// each pass one kernel (cuda::evaluate_pass, kernels/cuda/expr_device_evaluate.cuh), the
// per-column scalars computed on the device. Without a tolerance the solve never waits for the
// host; with one it reads the residuals once per iteration to stop converged columns.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/solvers/cgls.hpp"
#include "kernels/solvers/cgls_workspace.hpp"
#include "kernels/solvers/cuda/device_projection_operator.hpp"

namespace slicestream::solvers::cuda {

// The GPU twin of CglsWorkspace (kernels/solvers/cgls_workspace.hpp): the device vectors of
// cgls_gpu, kept between solves, grown (never shrunk) to the largest problem served.
class CglsWorkspaceGpu {
 public:
  // Grows the device vectors to serve `size` (reallocating only what is too small; the old
  // buffers are freed before the new ones are allocated). Synchronous allocation: call between
  // solves.
  void reserve(const CglsSize& size);
  const CglsSize& capacity() const { return capacity_; }
  // cgls_gpu_workspace_bytes(capacity()): what the device buffers hold.
  std::size_t bytes() const;

  // The vectors, sized by reserve() and written only by cgls_gpu (cgls_gpu.cu).
  ::slicestream::cuda::DeviceBuffer<float> r, q, s, p, t, alpha, beta, p_max;
  // start: |s|^2 then max |s| (gamma is its first half); history: |r|^2 of every iteration.
  ::slicestream::cuda::DeviceBuffer<double> b_norm2, start, delta, gamma_next, p_max_d, history;
  ::slicestream::cuda::DeviceBuffer<int> active, step_counts;

 private:
  CglsSize capacity_{0, 0, 0, 0};
};

// b: rays x columns and x: pixels x columns in device memory; x holds the start value on entry.
// The device vectors come from `workspace` (grown when the problem needs it; a fresh
// CglsWorkspaceGpu for a one-off solve).
CglsReport cgls_gpu(DeviceProjectionOperator& op, const float* b, float* x, int columns,
                    const CglsOptions& options, cudaStream_t stream, CglsWorkspaceGpu& workspace);

}  // namespace slicestream::solvers::cuda
