// FISTA on the GPU over a DeviceProjectionOperator: the algorithm of kernels/solvers/fista.hpp
// (the CPU twin, fista_cpu) from the same sweep (fista_iterations.hpp) and the same fused passes
// (fista_steps.hpp, the TV gradient of total_variation.hpp), each pass one kernel of the
// expression layer's device evaluation. The per-column scalars are computed on the host from the
// passes' reductions: the solve waits for the device a few times per iteration.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/solvers/cgls_workspace.hpp"
#include "kernels/solvers/cuda/device_projection_operator.hpp"
#include "kernels/solvers/fista.hpp"

namespace slicestream::solvers::cuda {

// The GPU twin of FistaWorkspace: device vectors kept between solves, grown (never shrunk).
class FistaWorkspaceGpu {
 public:
  // Synchronous allocation: call between solves.
  void reserve(const CglsSize& size);
  const CglsSize& capacity() const { return capacity_; }
  std::size_t bytes() const { return fista_workspace_bytes(capacity_); }

  ::slicestream::cuda::DeviceBuffer<float> r, ax, ax_next, y, z, g;
  ::slicestream::cuda::DeviceBuffer<float> step, beta, active, tikhonov, tv_weight, tv_epsilon;
  ::slicestream::cuda::DeviceBuffer<double> results;  // a pass's reductions (3 per column)

 private:
  CglsSize capacity_{0, 0, 0, 0};
};

// b: rays x columns and x: pixels x columns in device memory; x holds the start image on entry.
FistaReport fista_gpu(DeviceProjectionOperator& op, const float* b, float* x, int columns,
                      const FistaOptions& options, cudaStream_t stream,
                      FistaWorkspaceGpu& workspace);

}  // namespace slicestream::solvers::cuda
