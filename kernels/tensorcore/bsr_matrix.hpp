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
//
// The products run on the GPU (cuda/bsr_spmm.hpp); their CPU twins, which the tests compare the
// kernels against, are in tests/support/bsr_multiply_cpu.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/executor.hpp"
#include "kernels/tensorcore/column_layouts.hpp"
#include "kernels/tensorcore/index_mapping.hpp"
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

// The number of non-empty blocks of block_rows x block_cols in every block row after
// renumbering (build_bsr's first pass; summed, the block counts of the orderings without storing
// any block).
std::vector<std::int32_t> blocks_per_block_row(Executor& executor, const CsrMatrix& a,
                                               const IndexMapping& rows, const ColumnLayouts& cols,
                                               int block_rows, int block_cols);

// rows.size() == a.rows and cols.pixels() == a.cols; mapped sizes are padded up to block
// multiples (each column layout starts at a multiple of 16).
BsrMatrixHalf build_bsr(Executor& executor, const CsrMatrix& a, const IndexMapping& rows,
                        const ColumnLayouts& cols, WmmaShape shape, float value_scale);

}  // namespace slicestream::tensorcore
