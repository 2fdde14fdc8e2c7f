#include "kernels/tensorcore/tensorcore_matrix.hpp"

#include <stdexcept>

#include "kernels/tensorcore/pseudo_morton.hpp"
#include "kernels/tensorcore/ray_sheared_ordering.hpp"
#include "kernels/tensorcore/symmetric_gather.hpp"

namespace slicestream::tensorcore {

const char* to_string(BlockOrdering ordering) {
  switch (ordering) {
    case BlockOrdering::kNatural:
      return "natural";
    case BlockOrdering::kPseudoMorton:
      return "pseudo-Morton";
    case BlockOrdering::kRaySheared:
      return "ray-sheared";
  }
  return "unknown";
}

IndexMapping make_row_mapping(const Geometry2d& geometry, BlockOrdering ordering, int block_rows) {
  switch (ordering) {
    case BlockOrdering::kNatural:
      return identity_mapping(geometry.rays(), geometry.rays());
    case BlockOrdering::kPseudoMorton:
      return make_pseudo_morton_mapping(geometry.bins, geometry.angles());
    case BlockOrdering::kRaySheared:
      return ray_sheared_row_mapping(geometry, ray_sheared_params(block_rows));
  }
  throw std::invalid_argument("unknown block ordering");
}

ColumnLayouts make_col_layouts(const Geometry2d& geometry, const ImageGrid2d& grid,
                               BlockOrdering ordering, int block_rows) {
  switch (ordering) {
    case BlockOrdering::kNatural:
      return single_layout(identity_mapping(grid.pixels(), grid.pixels()));
    case BlockOrdering::kPseudoMorton:
      return single_layout(make_pseudo_morton_mapping(grid.width, grid.height));
    case BlockOrdering::kRaySheared:
      return ray_sheared_columns(geometry, grid, ray_sheared_params(block_rows));
  }
  throw std::invalid_argument("unknown block ordering");
}

TensorCoreMatrix build_tensorcore_matrix(Executor& executor, const Geometry2d& geometry,
                                         const ImageGrid2d& grid,
                                         const TensorCoreMatrixOptions& options) {
  std::shared_ptr<const SymmetryPlan> plan;
  DdMatrixOptions dd;
  if (options.symmetric) {
    plan = std::make_shared<const SymmetryPlan>(make_symmetry_plan(geometry, grid));
    dd.column_factors = &plan->column_factor;
  }
  const CsrMatrix a = build_dd_matrix(executor, geometry, grid, dd);
  return build_tensorcore_matrix(executor, a, geometry, grid, options, plan);
}

TensorCoreMatrix build_tensorcore_matrix(Executor& executor, const CsrMatrix& a,
                                         const Geometry2d& geometry, const ImageGrid2d& grid,
                                         const TensorCoreMatrixOptions& options,
                                         std::shared_ptr<const SymmetryPlan> plan) {
  if (options.symmetric && plan == nullptr) {
    throw std::invalid_argument("build_tensorcore_matrix: symmetric needs a symmetry plan");
  }
  if (a.rows != geometry.rays() || a.cols != grid.pixels()) {
    throw std::invalid_argument("build_tensorcore_matrix: matrix does not match geometry and grid");
  }
  TensorCoreMatrix m;
  m.geometry = geometry;
  m.grid = grid;
  m.options = options;
  m.nnz = a.nnz();
  const int block_rows = dims(options.shape).m;
  m.row_mapping = make_row_mapping(geometry, options.ordering, block_rows);
  m.col_layouts = make_col_layouts(geometry, grid, options.ordering, block_rows);
  m.bsr = build_bsr(executor, a, m.row_mapping, m.col_layouts, options.shape,
                    static_cast<float>(grid.pixel_mm));
  m.symmetry = options.symmetric ? std::move(plan) : nullptr;
  if (m.symmetry != nullptr && gathered_symmetry_problem(m).empty()) {
    m.gathered_forward = group_blocks(executor, m.bsr);
    m.gathered_backward = group_blocks(executor, build_transposed_blocks(executor, a, m));
  }
  return m;
}

}  // namespace slicestream::tensorcore
