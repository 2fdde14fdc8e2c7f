// The distance-driven system matrix in CSR form (fp32): rows are rays (projection-major,
// row = projection * bins + bin), columns are pixels (row-major image). Built in parallel over
// projections; the source of the fp16 BSR storage and of the cuSPARSE baseline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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
  int threads = 0;  // 0: all hardware threads
};

CsrMatrix build_dd_matrix(const Geometry2d& geometry, const ImageGrid2d& grid,
                          const DdMatrixOptions& options = {});

// The transpose (rows and columns swapped, columns sorted within each row).
CsrMatrix transpose(const CsrMatrix& a);

// CPU reference products with `columns` right-hand sides stored row-major (element (i, c) at
// i * columns + c), accumulated in double: y = A x and x = A^T y.
void csr_multiply(const CsrMatrix& a, const float* x, float* y, int columns);
void csr_multiply_transposed(const CsrMatrix& a, const float* y, float* x, int columns);

}  // namespace slicestream::tensorcore
