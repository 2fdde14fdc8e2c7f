#include "kernels/tensorcore/symmetric_gather.hpp"

#include <stdexcept>

#include "kernels/tensorcore/half_float.hpp"
#include "kernels/tensorcore/parallel_for.hpp"
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

BsrMatrixHalf build_transposed_blocks(const CsrMatrix& a_oct, const TensorCoreMatrix& m,
                                      int threads) {
  if (const std::string why = gathered_symmetry_problem(m); !why.empty()) {
    throw std::invalid_argument("transposed blocks: " + why);
  }
  return build_bsr(transpose(a_oct), m.col_layouts.layouts.front(), single_layout(m.row_mapping),
                   WmmaShape::kM16N16K16, m.bsr.value_scale, threads);
}

void gathered_product_cpu(const GroupedBlocks& blocks, const std::int32_t* source,
                          const std::int32_t* target, const float* in, float* out, int slices) {
  const long long block_rows = blocks.block_row_count();
  for (int g = 0; g < kSymmetryCount; ++g) {
    const std::int32_t* src = source + g * blocks.cols;
    const std::int32_t* dst = target + g * blocks.rows;
    // Groups in parallel: within one g every output row has one source row (g is a bijection),
    // so no two groups write the same output.
    parallel_for(blocks.group_count(), [&](long long group, int) {
      std::vector<double> acc(static_cast<std::size_t>(kGroupRows) * 16 * slices, 0.0);
      for (std::int32_t c = blocks.group_chunk[static_cast<std::size_t>(group)];
           c < blocks.group_chunk[static_cast<std::size_t>(group) + 1]; ++c) {
        const std::uint64_t mask = blocks.chunk_mask[static_cast<std::size_t>(c)];
        std::int32_t id = blocks.chunk_block[static_cast<std::size_t>(c)];
        for (int bit = 0; bit < kChunkTiles * kGroupRows; ++bit) {  // bit order: (row, tile)
          if (((mask >> bit) & 1u) == 0) continue;
          const int row = chunk_bit_row(bit);
          const long long col0 =
              16LL * blocks.chunk_tile[static_cast<std::size_t>(c) * kChunkTiles +
                                       static_cast<std::size_t>(chunk_bit_tile(bit))];
          const std::uint16_t* block = blocks.blocks.data() + static_cast<std::size_t>(id++) * 256;
          for (int k = 0; k < 16; ++k) {
            const std::int32_t row_in = src[col0 + k];
            if (row_in < 0) continue;
            const float* x = in + static_cast<std::size_t>(row_in) * slices;
            for (int i = 0; i < 16; ++i) {
              const double a = half_bits_to_float(block[i * 16 + k]);
              if (a == 0) continue;
              double* y = acc.data() + static_cast<std::size_t>(row * 16 + i) * slices;
              for (int s = 0; s < slices; ++s)
                y[s] += a * x[s];
            }
          }
        }
      }
      for (int row = 0; row < kGroupRows; ++row) {
        const long long block_row = group * kGroupRows + row;
        if (block_row >= block_rows) break;
        for (int i = 0; i < 16; ++i) {
          const std::int32_t row_out = dst[block_row * 16 + i];
          if (row_out < 0) continue;
          float* y = out + static_cast<std::size_t>(row_out) * slices;
          const double* sum = acc.data() + static_cast<std::size_t>(row * 16 + i) * slices;
          for (int s = 0; s < slices; ++s)
            y[s] += static_cast<float>(blocks.value_scale * sum[s]);
        }
      }
    });
  }
}

}  // namespace slicestream::tensorcore
