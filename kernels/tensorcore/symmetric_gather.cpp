#include "kernels/tensorcore/symmetric_gather.hpp"

#include <stdexcept>

#include "kernels/tensorcore/tensorcore_matrix.hpp"

namespace slicestream::tensorcore {

std::string gathered_symmetry_problem(const TensorCoreMatrix& m) {
  if (m.symmetry == nullptr) return "the matrix is not the symmetric (octant) matrix";
  if (m.col_layouts.layouts.size() != 1) {
    return "the gathered products need one column layout (not the ray-sheared ordering)";
  }
  if (m.bsr.block_rows != 16 || m.bsr.block_cols != 16) {
    return "the gathered products need 16 x 16 blocks (fragment shape 16.16.16)";
  }
  return {};
}

SymmetricGatherTables make_symmetric_gather_tables(const TensorCoreMatrix& m) {
  if (const std::string why = gathered_symmetry_problem(m); !why.empty()) {
    throw std::invalid_argument("gathered symmetric products: " + why);
  }
  const SymmetryPlan& plan = *m.symmetry;
  const long long pixels = m.grid.pixels();
  // Position of every octant pixel in plan.octant_pixels (-1 outside the octant).
  std::vector<std::int32_t> octant_index(static_cast<std::size_t>(pixels), -1);
  for (std::size_t i = 0; i < plan.octant_pixels.size(); ++i)
    octant_index[static_cast<std::size_t>(plan.octant_pixels[i])] = static_cast<std::int32_t>(i);

  SymmetricGatherTables t;
  t.rows = m.bsr.rows;
  t.cols = m.bsr.cols;
  t.ray_of_row.assign(static_cast<std::size_t>(kSymmetryCount * t.rows), -1);
  t.pixel_of_col.assign(static_cast<std::size_t>(kSymmetryCount * t.cols), -1);
  const std::vector<std::int32_t>& ray_of_slot = m.row_mapping.to_original;
  const std::vector<std::int32_t>& pixel_of_slot = m.col_layouts.layouts.front().to_original;
  for (int g = 0; g < kSymmetryCount; ++g) {
    const auto& ray_image = plan.ray_image[static_cast<std::size_t>(g)];
    const auto& pixel_image = plan.pixel_image[static_cast<std::size_t>(g)];
    for (std::size_t row = 0; row < ray_of_slot.size(); ++row) {
      const std::int32_t r = ray_of_slot[row];
      if (r >= 0) {
        t.ray_of_row[static_cast<std::size_t>(g * t.rows) + row] =
            ray_image[static_cast<std::size_t>(r)];
      }
    }
    for (std::size_t col = 0; col < pixel_of_slot.size(); ++col) {
      const std::int32_t p = pixel_of_slot[col];
      const std::int32_t i = p >= 0 ? octant_index[static_cast<std::size_t>(p)] : -1;
      if (i >= 0) {
        t.pixel_of_col[static_cast<std::size_t>(g * t.cols) + col] =
            pixel_image[static_cast<std::size_t>(i)];
      }
    }
  }
  return t;
}

BsrMatrixHalf build_transposed_blocks(Executor& executor, const CsrMatrix& a_oct,
                                      const TensorCoreMatrix& m) {
  if (const std::string why = gathered_symmetry_problem(m); !why.empty()) {
    throw std::invalid_argument("transposed blocks: " + why);
  }
  return build_bsr(executor, transpose(a_oct), m.col_layouts.layouts.front(),
                   single_layout(m.row_mapping), WmmaShape::kM16N16K16, m.bsr.value_scale);
}

}  // namespace slicestream::tensorcore
