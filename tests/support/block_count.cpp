#include "tests/support/block_count.hpp"

#include <cstdint>
#include <vector>

namespace slicestream::tensorcore {

BlockCount count_blocks(Executor& executor, const CsrMatrix& a, const IndexMapping& rows,
                        const ColumnLayouts& cols, int block_rows, int block_cols) {
  const std::vector<std::int32_t> per_row =
      blocks_per_block_row(executor, a, rows, cols, block_rows, block_cols);
  const long long block_col_count = (cols.mapped_size + block_cols - 1) / block_cols;
  BlockCount count;
  count.possible = static_cast<long long>(per_row.size()) * block_col_count;
  for (std::int32_t n : per_row)
    count.nonempty += n;
  return count;
}

}  // namespace slicestream::tensorcore
