// Block compressed sparse rows in fp16 (paper §3.2, Fig. 3), sized to a WMMA fragment: a block is
// m rays x 16 pixels (one A tile), stored row-major; blocks of a block row are sorted by block
// column. Built from the CSR matrix after renumbering rows and columns (paper Fig. 2).
//
// The transposed product reads the same blocks through a column index (block ids grouped by block
// column): 12 bytes per block beside 256-1024 bytes of block data, and no second copy of the
// weights.
//
// Values are stored divided by value_scale (the pixel size), so that fp16 holds dimensionless
// weights of order 1 whatever the units; products multiply by value_scale in fp32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/tensorcore/column_layouts.hpp"
#include "kernels/tensorcore/index_mapping.hpp"
#include "kernels/tensorcore/mma_accumulation.hpp"
#include "kernels/tensorcore/sparse_matrix.hpp"
#include "kernels/tensorcore/wmma_shape.hpp"

namespace slicestream::tensorcore {

struct BsrMatrixHalf {
  long long rows = 0;  // mapped rows, a multiple of block_rows
  long long cols = 0;  // mapped columns, a multiple of block_cols
  int block_rows = 0;  // m of the fragment
  int block_cols = 16;
  float value_scale = 1;
  std::vector<std::int32_t> row_ptr;         // block rows + 1
  std::vector<std::int32_t> col_index;       // per block: its block column
  std::vector<std::uint16_t> blocks;         // fp16 bits, block_count() * block_elements()
  std::vector<std::int32_t> col_ptr;         // block columns + 1
  std::vector<std::int32_t> col_blocks;      // block ids grouped by block column
  std::vector<std::int32_t> col_block_rows;  // the block row of each entry of col_blocks

  long long block_row_count() const { return rows / block_rows; }
  long long block_col_count() const { return cols / block_cols; }
  long long block_count() const { return static_cast<long long>(col_index.size()); }
  long long block_elements() const { return static_cast<long long>(block_rows) * block_cols; }
  long long possible_blocks() const { return block_row_count() * block_col_count(); }
  std::size_t block_bytes() const { return blocks.size() * sizeof(std::uint16_t); }
  std::size_t index_bytes() const {
    return (row_ptr.size() + col_index.size() + col_ptr.size() + col_blocks.size() +
            col_block_rows.size()) *
           sizeof(std::int32_t);
  }
  std::size_t bytes() const { return block_bytes() + index_bytes(); }
};

struct BlockCount {
  long long possible = 0;  // block rows x block columns of the padded matrix
  long long nonempty = 0;
  double nonempty_percent() const {
    return possible > 0 ? 100.0 * static_cast<double>(nonempty) / static_cast<double>(possible) : 0;
  }
};

// Non-empty blocks of block_rows x block_cols after renumbering, without storing them (Table 3).
BlockCount count_blocks(const CsrMatrix& a, const IndexMapping& rows, const ColumnLayouts& cols,
                        int block_rows, int block_cols, int threads = 0);

// rows.size() == a.rows and cols.pixels() == a.cols; mapped sizes are padded up to block
// multiples (each column layout starts at a multiple of 16).
BsrMatrixHalf build_bsr(const CsrMatrix& a, const IndexMapping& rows, const ColumnLayouts& cols,
                        WmmaShape shape, float value_scale, int threads = 0);

// CPU twins of the WMMA products, in the mapped spaces, from the stored fp16 values; `columns`
// right-hand sides row-major. x has bsr.cols rows, y has bsr.rows rows. Sums are exact (double)
// unless `accumulation` asks for the tensor core model (mma_accumulation.hpp), which follows the
// kernels' order: blocks in storage order (forward) or column-index order (transposed), k-steps
// of rays 0-15 then 16-31 for 32-row blocks.
void bsr_multiply_cpu(const BsrMatrixHalf& bsr, const float* x, float* y, int columns,
                      const MmaAccumulation& accumulation = {});
void bsr_multiply_transposed_cpu(const BsrMatrixHalf& bsr, const float* y, float* x, int columns,
                                 const MmaAccumulation& accumulation = {});

}  // namespace slicestream::tensorcore
