#include "kernels/solvers/cuda/fista_gpu.hpp"

#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/expr_device_evaluate.cuh"
#include "kernels/solvers/fista_iterations.hpp"

namespace slicestream::solvers::cuda {
namespace {

// fista_iterations.hpp's engine on the device: every pass one kernel on `stream`; reductions
// come back to the host (the scalars are decided there), scalars go to the device.
struct DeviceEngine {
  DeviceProjectionOperator& op;
  int columns;
  cudaStream_t stream;
  double* device_results;

  template <class P>
  void pass(const P& pass, expr::Extent2D extent, double* host_results) {
    ::slicestream::cuda::evaluate_pass(pass, extent, device_results, stream);
    if constexpr (P::kReductions > 0) {
      if (host_results != nullptr) {
        const std::size_t count =
            static_cast<std::size_t>(P::kReductions) * static_cast<std::size_t>(extent.cols);
        SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(host_results, device_results, count * sizeof(double),
                                               cudaMemcpyDeviceToHost, stream));
        SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
      }
    }
  }
  void forward(const float* image, float* sinogram) {
    op.forward(image, sinogram, columns, stream);
  }
  void backward(const float* sinogram, float* image) {
    op.backward(sinogram, image, columns, stream);
  }
  // The host vector must outlive the copy: synchronised here (a few bytes per column).
  void upload(float* target, const std::vector<float>& host) {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(target, host.data(), host.size() * sizeof(float),
                                           cudaMemcpyHostToDevice, stream));
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
};

}  // namespace

void FistaWorkspaceGpu::reserve(const CglsSize& size) {
  if (size.fits_in(capacity_)) return;
  const CglsSize grown = capacity_.covering(size);
  const auto columns = static_cast<std::size_t>(grown.columns);
  for (auto* v : {&r, &ax, &ax_next})
    v->resize(static_cast<std::size_t>(grown.rays) * columns);
  for (auto* v : {&y, &z, &g})
    v->resize(static_cast<std::size_t>(grown.pixels) * columns);
  for (auto* v : {&step, &beta, &active, &tikhonov, &tv_weight, &tv_epsilon})
    v->resize(columns);
  results.resize(3 * columns);
  capacity_ = grown;
}

FistaReport fista_gpu(DeviceProjectionOperator& op, const float* b, float* x, int columns,
                      const FistaOptions& options, cudaStream_t stream,
                      FistaWorkspaceGpu& workspace) {
  validate_fista(options, op.pixels(), columns);
  workspace.reserve({op.rays(), op.pixels(), columns, 0});
  const fista_detail::FistaVectors vectors = fista_detail::vectors_of(workspace);
  DeviceEngine engine{op, columns, stream, workspace.results.data()};
  FistaReport report =
      fista_detail::fista_solve(engine, vectors, b, x, columns, op.rays(), op.pixels(), options);
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return report;
}

}  // namespace slicestream::solvers::cuda
