// Everything the Tensor Core projector stores for one geometry, grid and fragment shape: the row
// and column renumbering, the fp16 BSR blocks, and for the symmetric variant the plan of the 8
// transforms (then the matrix is A_oct, 1/8 of A). Built on the CPU, uploaded by the CUDA side.
#pragma once

#include <memory>

#include "kernels/tensorcore/bsr_matrix.hpp"
#include "kernels/tensorcore/column_layouts.hpp"
#include "kernels/tensorcore/geometry_2d.hpp"
#include "kernels/tensorcore/grouped_blocks.hpp"
#include "kernels/tensorcore/index_mapping.hpp"
#include "kernels/tensorcore/sparse_matrix.hpp"
#include "kernels/tensorcore/square_symmetry.hpp"
#include "kernels/tensorcore/wmma_shape.hpp"

namespace slicestream::tensorcore {

enum class BlockOrdering {
  kNatural,       // rows projection-major, columns row-major (the "before" of Table 3)
  kPseudoMorton,  // Alg. 2 with bx = 4, by = 2 on rows (bin, projection) and columns (col, row)
  kRaySheared,    // per-sector pixel tiles along the rays (ray_sheared_ordering.hpp)
};
const char* to_string(BlockOrdering ordering);

struct TensorCoreMatrixOptions {
  WmmaShape shape = WmmaShape::kM8N32K16;
  BlockOrdering ordering = BlockOrdering::kPseudoMorton;
  bool symmetric = false;  // store A_oct and use the 8-fold symmetry (refused where invalid)
};

struct TensorCoreMatrix {
  Geometry2d geometry;
  ImageGrid2d grid;
  TensorCoreMatrixOptions options;
  long long nnz = 0;          // non-zeros of the stored matrix (A or A_oct)
  IndexMapping row_mapping;   // rays -> mapped rows
  ColumnLayouts col_layouts;  // pixels -> mapped columns (one layout per sector for kRaySheared)
  BsrMatrixHalf bsr;
  // The gathered products' blocks (symmetric_gather.hpp): A_oct's (forward) and A_oct^T's
  // (backward), regrouped (grouped_blocks.hpp); built for symmetric matrices that allow the
  // gathered products, empty otherwise.
  GroupedBlocks gathered_forward;
  GroupedBlocks gathered_backward;
  std::shared_ptr<const SymmetryPlan> symmetry;  // set when options.symmetric
};

// The row and column renumbering of an ordering for blocks of `block_rows` rows.
IndexMapping make_row_mapping(const Geometry2d& geometry, BlockOrdering ordering, int block_rows);
ColumnLayouts make_col_layouts(const Geometry2d& geometry, const ImageGrid2d& grid,
                               BlockOrdering ordering, int block_rows);

// Builds the CSR matrix (A, or A_oct with the octant's column factors) and its BSR form, in
// parallel on `executor`. Throws std::invalid_argument for invalid geometry, or for symmetric
// without the symmetry.
TensorCoreMatrix build_tensorcore_matrix(Executor& executor, const Geometry2d& geometry,
                                         const ImageGrid2d& grid,
                                         const TensorCoreMatrixOptions& options);
// From a CSR matrix built already (several orderings and shapes of one matrix): A, or for
// symmetric A_oct built with plan->column_factor.
TensorCoreMatrix build_tensorcore_matrix(Executor& executor, const CsrMatrix& a,
                                         const Geometry2d& geometry, const ImageGrid2d& grid,
                                         const TensorCoreMatrixOptions& options,
                                         std::shared_ptr<const SymmetryPlan> plan);

}  // namespace slicestream::tensorcore
