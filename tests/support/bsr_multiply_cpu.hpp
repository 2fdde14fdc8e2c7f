// CPU twins of the WMMA BSR products (kernels/tensorcore/cuda/bsr_spmm.hpp), in the mapped
// spaces, from the stored fp16 values; `columns` right-hand sides row-major. x has bsr.cols rows,
// y has bsr.rows rows. Sums are exact (double) unless `accumulation` asks for the tensor core
// model (mma_accumulation_model.hpp), which follows the kernels' order: blocks in storage order
// (forward) or column-index order (transposed), k-steps of rays 0-15 then 16-31 for 32-row blocks.
#pragma once

#include "kernels/executor.hpp"
#include "kernels/tensorcore/bsr_matrix.hpp"
#include "tests/support/mma_accumulation_model.hpp"

namespace slicestream::tensorcore {

void bsr_multiply_cpu(Executor& executor, const BsrMatrixHalf& bsr, const float* x, float* y,
                      int columns, const MmaAccumulation& accumulation = {});
void bsr_multiply_transposed_cpu(Executor& executor, const BsrMatrixHalf& bsr, const float* y,
                                 float* x, int columns, const MmaAccumulation& accumulation = {});

}  // namespace slicestream::tensorcore
