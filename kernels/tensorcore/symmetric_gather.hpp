// The gathered form of the 8-fold symmetric operator (square_symmetry.hpp): instead of 8 product
// columns per slice (the octant operand G_g x materialised for every g, the 8 projections summed
// afterwards), every product reads its operand rows through the symmetry and adds its results
// where the symmetry sends them:
//   forward:   y[g r, s]  += sum_q A_oct[r, q] x[g q, s]      for every g
//   backward:  x[g q, s]  += sum_r A_oct[r, q] y[g r, s]      (A_oct^T, stored as its own blocks)
// so the products keep one column per slice (32 slices: 32 columns, not 256), no 8-column
// intermediates exist, and each stored block serves all 8 transforms of itself while it is
// loaded. Both directions are the same kernel over different blocks with the two tables swapped;
// both read their blocks regrouped (grouped_blocks.hpp) so that neighbouring block rows stage
// their shared operand tiles once.
//
// Valid for symmetric matrices with one column layout and 16 x 16 blocks. The kernel's CPU twin
// is tests/support/gathered_product_cpu.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/executor.hpp"
#include "kernels/tensorcore/bsr_matrix.hpp"
#include "kernels/tensorcore/grouped_blocks.hpp"

namespace slicestream::tensorcore {

struct TensorCoreMatrix;

struct SymmetricGatherTables {
  long long rows = 0;  // mapped rows of A_oct (bsr.rows)
  long long cols = 0;  // mapped columns of A_oct (bsr.cols)
  // [g * rows + row]: the ray g(r) of the mapped row's ray r; -1 for padding rows.
  std::vector<std::int32_t> ray_of_row;
  // [g * cols + col]: the pixel g(q) of the mapped column's octant pixel q; -1 for columns that
  // hold no octant pixel (padding, pixels outside the octant).
  std::vector<std::int32_t> pixel_of_col;
};

// Empty when `m` can use the gathered products, else why not.
std::string gathered_symmetry_problem(const TensorCoreMatrix& m);
// Throws std::invalid_argument with gathered_symmetry_problem's message.
SymmetricGatherTables make_symmetric_gather_tables(const TensorCoreMatrix& m);

// A_oct^T as BSR blocks of 16 mapped columns (octant pixels) x 16 mapped rows (rays), built from
// A_oct's CSR with the same renumbering, so that the backward product reads rows like the
// forward one.
BsrMatrixHalf build_transposed_blocks(Executor& executor, const CsrMatrix& a_oct,
                                      const TensorCoreMatrix& m);

}  // namespace slicestream::tensorcore
