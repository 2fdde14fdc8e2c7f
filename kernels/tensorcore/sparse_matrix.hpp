// The distance-driven system matrix in CSR form (fp32): rows are rays (projection-major,
// row = projection * bins + bin), columns are pixels (row-major image). Built in parallel over
// projections on the caller's Executor; the source of the fp16 BSR storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/executor.hpp"
#include "kernels/tensorcore/geometry_2d.hpp"

namespace slicestream::tensorcore {

struct CsrMatrix {
  long long rows = 0;
  long long cols = 0;
  std::vector<long long> row_ptr;  // rows + 1 entries
  std::vector<std::int32_t> col;   // sorted within each row
  std::vector<float> values;
  long long nnz() const { return static_cast<long long>(values.size()); }
  // Storage as cuSPARSE holds it: fp32 values, int32 column indices and row offsets.
  std::size_t bytes_fp32() const {
    return values.size() * (sizeof(float) + sizeof(std::int32_t)) +
           row_ptr.size() * sizeof(std::int32_t);
  }
};

struct DdMatrixOptions {
  // Optional per-pixel factor (grid.pixels() entries): each column is scaled by it, and columns
  // with factor 0 are left out (the symmetry's octant matrix uses this).
  const std::vector<float>* column_factors = nullptr;
};

CsrMatrix build_dd_matrix(Executor& executor, const Geometry2d& geometry, const ImageGrid2d& grid,
                          const DdMatrixOptions& options = {});

// The transpose (rows and columns swapped, columns sorted within each row).
CsrMatrix transpose(const CsrMatrix& a);

// Products with `columns` right-hand sides stored row-major (element (i, c) at i * columns + c),
// accumulated in double: y = A x and x = A^T y.
void csr_multiply(Executor& executor, const CsrMatrix& a, const float* x, float* y, int columns);
void csr_multiply_transposed(Executor& executor, const CsrMatrix& a, const float* y, float* x,
                             int columns);

}  // namespace slicestream::tensorcore
