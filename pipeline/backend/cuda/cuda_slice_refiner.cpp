#include "pipeline/backend/cuda/cuda_slice_refiner.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/solvers/cgls.hpp"
#include "kernels/solvers/cuda/cgls_gpu.hpp"
#include "kernels/solvers/cuda/fista_gpu.hpp"
#include "kernels/tensorcore/cuda/tensorcore_projector.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"
#include "pipeline/backend/cpu/worker_pool.hpp"
#include "pipeline/backend/cuda/cuda_backend_impl.hpp"
#include "pipeline/backend/device_memory_budget.hpp"
#include "pipeline/backend/refinement_run.hpp"
#include "pipeline/backend/refinement_setup.hpp"

namespace slicestream {
namespace {

using cuda::DeviceBuffer;
using cuda_backend_detail::guarded;
using cuda_backend_detail::mib;

// hi + lo fp16 operands: with the split accumulation of the kernels this keeps CG within
// 0.2 % of fp32 CG (docs/performance.md, CG accuracy); one slice costs little either way.
tensorcore::cuda::TensorCoreProjectorOptions projector_options() {
  tensorcore::cuda::TensorCoreProjectorOptions options;
  options.compensated_operands = true;
  return options;
}

class CudaSliceRefiner final : public SliceRefiner {
 public:
  CudaSliceRefiner(int device, std::shared_ptr<const tensorcore::TensorCoreMatrix> matrix,
                   const tensorcore::ImageGrid2d& grid, MemoryAccount account)
      : device_(device),
        shape_(tensorcore::to_string(matrix->options.shape)),
        projector_(std::move(matrix), projector_options()),
        b_(static_cast<std::size_t>(projector_.rays())),
        ax_(static_cast<std::size_t>(projector_.rays())),
        x_(static_cast<std::size_t>(projector_.pixels())),
        grid_width_(grid.width),
        grid_height_(grid.height),
        charge_(std::move(account), 0) {
    projector_.reserve_operands(1);
    workspace_.reserve(cgls_size(kCudaRefinerIterations));
    fista_workspace_.reserve(cgls_size(0));
    charge_.set(memory_bytes());
  }

  std::string solver() const override { return std::string("cuda tensor-core fp16 ") + shape_; }
  std::size_t matrix_bytes() const override { return projector_.matrix_device_bytes(); }
  std::size_t memory_bytes() const override {
    return projector_.device_bytes() + workspace_.bytes() + fista_workspace_.bytes() + b_.bytes() +
           ax_.bytes() + x_.bytes();
  }

  double residual(const float* slice, const float* sinogram) override {
    return guarded("refinement residual", [&] {
      use_device();
      upload(x_, slice);
      projector_.forward(x_.data(), ax_.data(), 1, stream_.get());
      std::vector<float> ax(ax_.size());
      download(ax.data(), ax_);
      return solvers::relative_residual(ax.data(), sinogram, ax.size());
    });
  }

  RefinementResult refine(const float* x0, const float* sinogram, const RefinementRequest& request,
                          float* x_out) override {
    return guarded("refinement", [&] {
      use_device();
      upload(b_, sinogram);
      upload(x_, x0);
      Solves solves{*this, sinogram, x_out};
      const RefinementResult result =
          run_refinement(request, grid_width_, grid_height_, lipschitz_, solves);
      if (!solves.downloaded) download(x_out, x_);
      charge_.set(memory_bytes());  // a longer CGLS history
      return result;
    });
  }

 private:
  // run_refinement's solves on the device vectors (b_, x_ uploaded; the result downloaded to
  // x_out by clip() or after the solve).
  struct Solves {
    CudaSliceRefiner& refiner;
    const float* sinogram;
    float* x_out;
    bool downloaded = false;
    double start_residual() {
      refiner.download(x_out, refiner.x_);
      downloaded = true;
      return refiner.residual(x_out, sinogram);
    }
    solvers::CglsReport cgls(const solvers::CglsOptions& options) {
      const solvers::CglsSize size = refiner.cgls_size(options.max_iterations);
      if (!size.fits_in(refiner.workspace_.capacity())) {
        refiner.workspace_.reserve(size);  // a longer residual history only
      }
      return solvers::cuda::cgls_gpu(refiner.projector_, refiner.b_.data(), refiner.x_.data(), 1,
                                     options, refiner.stream_.get(), refiner.workspace_);
    }
    solvers::FistaReport fista(const solvers::FistaOptions& options) {
      return solvers::cuda::fista_gpu(refiner.projector_, refiner.b_.data(), refiner.x_.data(), 1,
                                      options, refiner.stream_.get(), refiner.fista_workspace_);
    }
    // CGLS's result clipped at 0 on the host (a rare setting: one download, one product).
    double clip() {
      refiner.download(x_out, refiner.x_);
      downloaded = true;
      const long long n = refiner.projector_.pixels();
      for (long long i = 0; i < n; ++i)
        x_out[i] = std::max(x_out[i], 0.0f);
      return refiner.residual(x_out, sinogram);
    }
  };

  void use_device() const { SLICESTREAM_CUDA_CHECK(cudaSetDevice(device_)); }
  solvers::CglsSize cgls_size(int iterations) const {
    return {projector_.rays(), projector_.pixels(), 1, iterations};
  }
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
  int grid_width_;
  int grid_height_;
  double lipschitz_ = 0;                       // ||A||^2, estimated by the first FISTA solve
  solvers::cuda::CglsWorkspaceGpu workspace_;  // kept across solves
  solvers::cuda::FistaWorkspaceGpu fista_workspace_;
  MemoryCharge charge_;  // last: charged once everything is allocated
};

// Throws BackendError naming `what` when `bytes` do not fit in the device's free memory less
// `reserve_bytes` (the free memory already excludes the scan, the targets and other refiners, and
// the admissions still allocating); else the ticket that holds `bytes` until they are allocated.
DeviceMemoryAdmissions::Ticket require_device_memory(DeviceMemoryAdmissions& admissions,
                                                     std::size_t bytes, std::size_t reserve_bytes,
                                                     const std::string& what) {
  DeviceMemoryAdmissions::Admission admission = admissions.admit(bytes, reserve_bytes);
  if (!admission.admitted) {
    throw BackendError("cuda backend: " + what + " " +
                       device_memory_shortfall(bytes, admission.memory.free_bytes, reserve_bytes));
  }
  return std::move(admission.ticket);
}

// One slice is one product column (two with compensated operands): the 32 x 8 x 16 fragment
// pads it to 8 columns, the other shapes to 16 or 32.
tensorcore::TensorCoreMatrixOptions refiner_matrix_options() {
  tensorcore::TensorCoreMatrixOptions options;
  options.shape = tensorcore::WmmaShape::kM32N8K16;
  return options;
}

}  // namespace

std::unique_ptr<SliceRefiner> make_cuda_slice_refiner(int device, const RefinementSetup& setup,
                                                      std::size_t reserve_bytes,
                                                      MemoryAccount account,
                                                      DeviceMemoryAdmissions& admissions) {
  return guarded("create_refiner", [&]() -> std::unique_ptr<SliceRefiner> {
    std::string problem = tensorcore::validate_geometry_2d(setup.geometry);
    if (problem.empty()) problem = tensorcore::validate_grid_2d(setup.grid);
    if (!problem.empty()) throw BackendError("cuda backend: cannot refine this slice: " + problem);
    SLICESTREAM_CUDA_CHECK(cudaSetDevice(device));
    // A first check before the build (seconds of CPU), from the estimate. Nothing is held through
    // the build: nothing is allocated on the device before its end.
    const std::string slice =
        std::to_string(setup.grid.width) + " x " + std::to_string(setup.grid.height) + " slice";
    const std::string shortfall = refiner_memory_shortfall(setup, admissions, reserve_bytes);
    if (!shortfall.empty()) {
      throw BackendError("cuda backend: the system matrix and CGLS vectors of a " + slice +
                         " need up to " + shortfall);
    }
    // The matrix is built on the host, on threads of a pool that lives as long as the build.
    WorkerPool build_workers(refiner_build_threads());
    auto matrix =
        std::make_shared<const tensorcore::TensorCoreMatrix>(tensorcore::build_tensorcore_matrix(
            build_workers, setup.geometry, setup.grid, refiner_matrix_options()));
    // Sparse 32-row blocks can take more than the CSR estimate: check with the real size too.
    const std::size_t estimate = estimated_cuda_refiner_bytes(setup);
    const std::size_t estimated_matrix = estimated_matrix_bytes(setup);
    const std::size_t rest = estimate > estimated_matrix ? estimate - estimated_matrix : 0;
    const DeviceMemoryAdmissions::Ticket admitted =
        require_device_memory(admissions, matrix->bsr.bytes() + rest, reserve_bytes,
                              "the fp16 system matrix (" + mib(matrix->bsr.bytes()) +
                                  ") and CGLS vectors of a " + slice + " need");
    return std::make_unique<CudaSliceRefiner>(device, std::move(matrix), setup.grid,
                                              std::move(account));
  });
}

std::string refiner_memory_shortfall(const RefinementSetup& setup,
                                     const DeviceMemoryAdmissions& admissions,
                                     std::size_t reserve_bytes) {
  return device_memory_shortfall(estimated_cuda_refiner_bytes(setup),
                                 admissions.available().free_bytes, reserve_bytes);
}

}  // namespace slicestream
