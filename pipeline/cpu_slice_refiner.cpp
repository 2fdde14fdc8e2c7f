#include "pipeline/cpu_slice_refiner.hpp"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/tensorcore/cgls.hpp"
#include "kernels/tensorcore/csr_projector.hpp"
#include "kernels/tensorcore/sparse_matrix.hpp"

namespace slicestream {
namespace {

std::string mib(std::size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

class CpuSliceRefiner final : public SliceRefiner {
 public:
  explicit CpuSliceRefiner(std::shared_ptr<const tensorcore::CsrMatrix> matrix)
      : matrix_(std::move(matrix)), projector_(matrix_) {}

  std::string solver() const override { return "cpu csr fp32"; }
  std::size_t matrix_bytes() const override { return matrix_->bytes_fp32(); }

  double residual(const float* slice, const float* sinogram) override {
    std::vector<float> ax(static_cast<std::size_t>(matrix_->rows));
    projector_.forward(slice, ax.data(), 1);
    return tensorcore::relative_residual(ax.data(), sinogram, ax.size());
  }

  RefinementResult refine(const float* x0, const float* sinogram, int iterations,
                          float* x_out) override {
    if (x_out != x0) std::copy(x0, x0 + matrix_->cols, x_out);
    tensorcore::CglsOptions options;
    options.max_iterations = iterations;
    const tensorcore::CglsReport report =
        tensorcore::cgls_cpu(projector_, sinogram, x_out, 1, options);
    return {report.relative_residual.front()[0], report.relative_residual.back()[0],
            report.iterations};
  }

 private:
  std::shared_ptr<const tensorcore::CsrMatrix> matrix_;
  tensorcore::CsrProjector projector_;
};

}  // namespace

std::unique_ptr<SliceRefiner> make_cpu_slice_refiner(const RefinementSetup& setup, int threads,
                                                     std::size_t memory_limit_bytes) {
  std::string problem = tensorcore::validate_geometry_2d(setup.geometry);
  if (problem.empty()) problem = tensorcore::validate_grid_2d(setup.grid);
  if (!problem.empty()) throw BackendError("cpu backend: cannot refine this slice: " + problem);
  const std::size_t estimate = estimated_matrix_bytes(setup);
  if (memory_limit_bytes > 0 && estimate > memory_limit_bytes) {
    throw BackendError("cpu backend: the system matrix of a " + std::to_string(setup.grid.width) +
                       " x " + std::to_string(setup.grid.height) + " slice and " +
                       std::to_string(setup.geometry.angles()) + " projections needs about " +
                       mib(estimate) + ", more than the " + mib(memory_limit_bytes) + " left");
  }
  try {
    tensorcore::DdMatrixOptions options;
    options.threads = std::max(threads, 0);
    auto matrix = std::make_shared<const tensorcore::CsrMatrix>(
        tensorcore::build_dd_matrix(setup.geometry, setup.grid, options));
    return std::make_unique<CpuSliceRefiner>(std::move(matrix));
  } catch (const std::bad_alloc&) {
    throw BackendError("cpu backend: out of memory while building a slice's system matrix");
  } catch (const std::invalid_argument& e) {
    throw BackendError(std::string("cpu backend: cannot refine this slice: ") + e.what());
  }
}

}  // namespace slicestream
