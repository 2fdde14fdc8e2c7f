// The fp32 CSR system matrix as a ProjectionOperator: the single-precision reference solver.
#pragma once

#include <memory>

#include "kernels/solvers/projection_operator.hpp"
#include "kernels/tensorcore/sparse_matrix.hpp"

namespace slicestream::tensorcore {

class CsrProjector : public solvers::ProjectionOperator {
 public:
  explicit CsrProjector(std::shared_ptr<const CsrMatrix> matrix) : matrix_(std::move(matrix)) {}
  long long rays() const override { return matrix_->rows; }
  long long pixels() const override { return matrix_->cols; }
  void forward(const float* image, float* sinogram, int columns) override {
    csr_multiply(*matrix_, image, sinogram, columns);
  }
  void backward(const float* sinogram, float* image, int columns) override {
    csr_multiply_transposed(*matrix_, sinogram, image, columns);
  }

 private:
  std::shared_ptr<const CsrMatrix> matrix_;
};

}  // namespace slicestream::tensorcore
