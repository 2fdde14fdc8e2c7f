#include "pipeline/backend/cpu/cpu_slice_refiner.hpp"

#include <algorithm>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/solvers/cgls.hpp"
#include "kernels/solvers/fista.hpp"
#include "kernels/tensorcore/csr_projector.hpp"
#include "kernels/tensorcore/sparse_matrix.hpp"
#include "pipeline/backend/refinement_run.hpp"

namespace slicestream {
namespace {

std::string mib(std::size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

// Host bytes of the matrix as this refiner holds it (64-bit row pointers).
std::size_t host_bytes(const tensorcore::CsrMatrix& m) {
  return m.values.size() * sizeof(float) + m.col.size() * sizeof(std::int32_t) +
         m.row_ptr.size() * sizeof(long long);
}

class CpuSliceRefiner final : public SliceRefiner {
 public:
  CpuSliceRefiner(std::shared_ptr<const tensorcore::CsrMatrix> matrix,
                  const tensorcore::ImageGrid2d& grid, Executor& workers, MemoryAccount account)
      : matrix_(std::move(matrix)),
        projector_(matrix_, workers),
        grid_width_(grid.width),
        grid_height_(grid.height),
        ax_(static_cast<std::size_t>(matrix_->rows)),
        charge_(std::move(account), 0) {
    workspace_.reserve({matrix_->rows, matrix_->cols, 1, 0});
    fista_workspace_.reserve({matrix_->rows, matrix_->cols, 1, 0});
    charge_.set(memory_bytes());
  }

  std::string solver() const override { return "cpu csr fp32"; }
  std::size_t matrix_bytes() const override { return matrix_->bytes_fp32(); }
  std::size_t memory_bytes() const override {
    return host_bytes(*matrix_) + workspace_.bytes() + fista_workspace_.bytes() +
           ax_.size() * sizeof(float);
  }

  double residual(const float* slice, const float* sinogram) override {
    projector_.forward(slice, ax_.data(), 1);
    return solvers::relative_residual(ax_.data(), sinogram, ax_.size());
  }

  RefinementResult refine(const float* x0, const float* sinogram, const RefinementRequest& request,
                          float* x_out) override {
    if (x_out != x0) std::copy(x0, x0 + matrix_->cols, x_out);
    Solves solves{*this, sinogram, x_out};
    return run_refinement(request, grid_width_, grid_height_, lipschitz_, solves);
  }

 private:
  std::shared_ptr<const tensorcore::CsrMatrix> matrix_;
  // run_refinement's solves on this refiner's vectors (x: the start value, then the result).
  struct Solves {
    CpuSliceRefiner& refiner;
    const float* b;
    float* x;
    double start_residual() { return refiner.residual(x, b); }
    solvers::CglsReport cgls(const solvers::CglsOptions& options) {
      return solvers::cgls_cpu(refiner.projector_, b, x, 1, options, refiner.workspace_);
    }
    solvers::FistaReport fista(const solvers::FistaOptions& options) {
      return solvers::fista_cpu(refiner.projector_, b, x, 1, options, refiner.fista_workspace_);
    }
    double clip() {
      std::transform(x, x + refiner.matrix_->cols, x, [](float v) { return std::max(v, 0.0f); });
      return refiner.residual(x, b);
    }
  };

  tensorcore::CsrProjector projector_;
  int grid_width_;
  int grid_height_;
  double lipschitz_ = 0;              // ||A||^2, estimated by the first FISTA solve
  solvers::CglsWorkspace workspace_;  // kept across solves (one slice: it never grows)
  solvers::FistaWorkspace fista_workspace_;
  std::vector<float> ax_;  // A x of residual()
  MemoryCharge charge_;
};

}  // namespace

std::unique_ptr<SliceRefiner> make_cpu_slice_refiner(const RefinementSetup& setup,
                                                     Executor& workers,
                                                     const SharedMemoryBudget& budget,
                                                     MemoryAccount account) {
  std::string problem = tensorcore::validate_geometry_2d(setup.geometry);
  if (problem.empty()) problem = tensorcore::validate_grid_2d(setup.grid);
  if (!problem.empty()) throw BackendError("cpu backend: cannot refine this slice: " + problem);
  const std::size_t estimate = estimated_cpu_refiner_bytes(setup);
  const std::shared_ptr<MemoryCharge> room = budget ? budget->try_charge(estimate) : nullptr;
  if (budget && !room) {
    throw BackendError("cpu backend: the system matrix and CGLS vectors of a " +
                       std::to_string(setup.grid.width) + " x " +
                       std::to_string(setup.grid.height) + " slice and " +
                       std::to_string(setup.geometry.angles()) + " projections need about " +
                       mib(estimate) + ", more than the " + mib(budget->free_bytes()) + " left");
  }
  try {
    auto matrix = std::make_shared<const tensorcore::CsrMatrix>(
        tensorcore::build_dd_matrix(workers, setup.geometry, setup.grid));
    return std::make_unique<CpuSliceRefiner>(std::move(matrix), setup.grid, workers,
                                             std::move(account));
  } catch (const std::bad_alloc&) {
    throw BackendError("cpu backend: out of memory while building a slice's system matrix");
  } catch (const std::invalid_argument& e) {
    throw BackendError(std::string("cpu backend: cannot refine this slice: ") + e.what());
  }
}

}  // namespace slicestream
