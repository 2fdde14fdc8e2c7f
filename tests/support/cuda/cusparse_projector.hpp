// The fp32 cuSPARSE baseline from the same distance-driven matrix, configured for speed (the
// reference the Tensor Core projector is measured against): CSR with 32-bit indices; A^T stored as
// a second CSR (made on the GPU with csr2csc) so that back projection is a non-transposed product
// too; several right-hand sides with row-major dense operands and CUSPARSE_SPMM_CSR_ALG3,
// preprocessed once per column count; one right-hand side with SpMV (CUSPARSE_SPMV_CSR_ALG1). If
// ALG3 is refused it falls back to ALG2 and says so in configuration().
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "kernels/solvers/cuda/device_projection_operator.hpp"
#include "kernels/tensorcore/sparse_matrix.hpp"

namespace slicestream::tensorcore::cuda {

class CusparseProjector final : public solvers::cuda::DeviceProjectionOperator {
 public:
  explicit CusparseProjector(const CsrMatrix& a);
  ~CusparseProjector() override;
  CusparseProjector(const CusparseProjector&) = delete;
  CusparseProjector& operator=(const CusparseProjector&) = delete;

  long long rays() const override;
  long long pixels() const override;
  void forward(const float* image, float* sinogram, int columns, cudaStream_t stream,
               const float* max_abs = nullptr) override;
  void backward(const float* sinogram, float* image, int columns, cudaStream_t stream,
                const float* max_abs = nullptr) override;

  std::size_t matrix_device_bytes() const;  // A (as used by forward), not counting A^T
  std::string configuration() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace slicestream::tensorcore::cuda
