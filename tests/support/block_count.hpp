// Non-empty blocks of a renumbered matrix without storing them (the paper's Table 3): the
// statistic the ordering tests and the Tensor Core benchmark compare the orderings by.
#pragma once

#include "kernels/executor.hpp"
#include "kernels/tensorcore/bsr_matrix.hpp"

namespace slicestream::tensorcore {

struct BlockCount {
  long long possible = 0;  // block rows x block columns of the padded matrix
  long long nonempty = 0;
  double nonempty_percent() const {
    return possible > 0 ? 100.0 * static_cast<double>(nonempty) / static_cast<double>(possible) : 0;
  }
};

BlockCount count_blocks(Executor& executor, const CsrMatrix& a, const IndexMapping& rows,
                        const ColumnLayouts& cols, int block_rows, int block_cols);

}  // namespace slicestream::tensorcore
