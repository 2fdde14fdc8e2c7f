#include "pipeline/cuda_backend/cuda_slice_refiner.hpp"

#include <string>
#include <vector>

#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/tensorcore/cgls.hpp"
#include "kernels/tensorcore/cuda/cgls_gpu.hpp"
#include "kernels/tensorcore/cuda/tensorcore_projector.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"
#include "pipeline/cuda_backend/cuda_backend_impl.hpp"

namespace slicestream {
namespace {

using cuda::DeviceBuffer;
using cuda_backend_detail::guarded;
using cuda_backend_detail::mib;

class CudaSliceRefiner final : public SliceRefiner {
 public:
  CudaSliceRefiner(int device, std::shared_ptr<const tensorcore::TensorCoreMatrix> matrix)
      : device_(device),
        shape_(tensorcore::to_string(matrix->options.shape)),
        projector_(std::move(matrix)),
        b_(static_cast<std::size_t>(projector_.rays())),
        ax_(static_cast<std::size_t>(projector_.rays())),
        x_(static_cast<std::size_t>(projector_.pixels())) {
    // hi + lo fp16 operands: with the split accumulation of the kernels this keeps CG within
    // 0.2 % of fp32 CG (docs/performance.md, CG accuracy); one slice costs little either way.
    projector_.set_compensated_operands(true);
  }

  std::string solver() const override { return std::string("cuda tensor-core fp16 ") + shape_; }
  std::size_t matrix_bytes() const override { return projector_.matrix_device_bytes(); }

  double residual(const float* slice, const float* sinogram) override {
    return guarded("refinement residual", [&] {
      use_device();
      upload(x_, slice);
      projector_.forward(x_.data(), ax_.data(), 1, stream_.get());
      std::vector<float> ax(ax_.size());
      download(ax.data(), ax_);
      return tensorcore::relative_residual(ax.data(), sinogram, ax.size());
    });
  }

  RefinementResult refine(const float* x0, const float* sinogram, int iterations,
                          float* x_out) override {
    return guarded("refinement", [&] {
      use_device();
      upload(b_, sinogram);
      upload(x_, x0);
      tensorcore::CglsOptions options;
      options.max_iterations = iterations;
      const tensorcore::CglsReport report =
          tensorcore::cuda::cgls_gpu(projector_, b_.data(), x_.data(), 1, options, stream_.get());
      download(x_out, x_);
      return RefinementResult{report.relative_residual.front()[0],
                              report.relative_residual.back()[0], report.iterations};
    });
  }

 private:
  void use_device() const { SLICESTREAM_CUDA_CHECK(cudaSetDevice(device_)); }
  void upload(DeviceBuffer<float>& device, const float* host) {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(device.data(), host, device.bytes(),
                                           cudaMemcpyHostToDevice, stream_.get()));
  }
  void download(float* host, const DeviceBuffer<float>& device) {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(host, device.data(), device.bytes(),
                                           cudaMemcpyDeviceToHost, stream_.get()));
    stream_.synchronize();
  }

  int device_;
  std::string shape_;
  cuda::Stream stream_;
  tensorcore::cuda::TensorCoreProjector projector_;
  DeviceBuffer<float> b_;
  DeviceBuffer<float> ax_;
  DeviceBuffer<float> x_;
};

// One slice is one product column (two with compensated operands): the 32 x 8 x 16 fragment
// pads it to 8 columns, the other shapes to 16 or 32.
tensorcore::TensorCoreMatrixOptions refiner_matrix_options() {
  tensorcore::TensorCoreMatrixOptions options;
  options.shape = tensorcore::WmmaShape::kM32N8K16;
  return options;
}

}  // namespace

std::unique_ptr<SliceRefiner> make_cuda_slice_refiner(int device, const RefinementSetup& setup,
                                                      std::size_t reserve_bytes) {
  return guarded("create_refiner", [&]() -> std::unique_ptr<SliceRefiner> {
    std::string problem = tensorcore::validate_geometry_2d(setup.geometry);
    if (problem.empty()) problem = tensorcore::validate_grid_2d(setup.grid);
    if (!problem.empty()) throw BackendError("cuda backend: cannot refine this slice: " + problem);
    SLICESTREAM_CUDA_CHECK(cudaSetDevice(device));
    // A first check before the build (seconds of CPU) from the fp32 CSR size.
    const std::size_t estimate = estimated_matrix_bytes(setup);
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    SLICESTREAM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (estimate + reserve_bytes > free_bytes) {
      throw BackendError(
          "cuda backend: the system matrix of a " + std::to_string(setup.grid.width) + " x " +
          std::to_string(setup.grid.height) + " slice needs up to " + mib(estimate) + ", " +
          mib(free_bytes) + " are free and " + mib(reserve_bytes) + " stay reserved");
    }
    auto matrix = std::make_shared<const tensorcore::TensorCoreMatrix>(
        tensorcore::build_tensorcore_matrix(setup.geometry, setup.grid, refiner_matrix_options()));
    // Sparse 32-row blocks can take more than the CSR estimate: check the real size too.
    SLICESTREAM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (matrix->bsr.bytes() + reserve_bytes > free_bytes) {
      throw BackendError(
          "cuda backend: the fp16 system matrix of a " + std::to_string(setup.grid.width) + " x " +
          std::to_string(setup.grid.height) + " slice takes " + mib(matrix->bsr.bytes()) + ", " +
          mib(free_bytes) + " are free and " + mib(reserve_bytes) + " stay reserved");
    }
    return std::make_unique<CudaSliceRefiner>(device, std::move(matrix));
  });
}

}  // namespace slicestream
