// The fp32 CSR system matrix as a ProjectionOperator, its products in parallel on the caller's
// Executor: the CPU backend's slice refiner and the single-precision reference of the tests.
#pragma once

#include <memory>

#include "kernels/executor.hpp"
#include "kernels/solvers/projection_operator.hpp"
#include "kernels/tensorcore/sparse_matrix.hpp"

namespace slicestream::tensorcore {

class CsrProjector : public solvers::ProjectionOperator {
 public:
  // `executor` must outlive the projector.
  CsrProjector(std::shared_ptr<const CsrMatrix> matrix, Executor& executor)
      : matrix_(std::move(matrix)), executor_(executor) {}
  long long rays() const override { return matrix_->rows; }
  long long pixels() const override { return matrix_->cols; }
  void forward(const float* image, float* sinogram, int columns) override {
    csr_multiply(executor_, *matrix_, image, sinogram, columns);
  }
  void backward(const float* sinogram, float* image, int columns) override {
    csr_multiply_transposed(executor_, *matrix_, sinogram, image, columns);
  }

 private:
  std::shared_ptr<const CsrMatrix> matrix_;
  Executor& executor_;
};

}  // namespace slicestream::tensorcore
