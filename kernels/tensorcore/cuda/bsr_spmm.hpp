// WMMA SpMM over the fp16 BSR blocks (paper §3.2): forward Y = A X row by row, and transposed
// X = A^T Y column by column through the column index, reading the same blocks (transposed on the
// fly by loading them as column-major A fragments). fp32 accumulation.
//
// Operand layouts (all chosen so that every fragment pointer is 32-byte aligned):
//   forward X (fp16):     [columns / n][x_rows][n]   n = the shape's fragment width (8, 16, 32)
//   forward Y (fp32):     [rows][columns]            row-major
//   transposed Y (fp16):  [columns16 / 16][y_rows][16], y_rows >= rows + 16 (zero padding)
//   transposed X (fp32):  [cols][x_columns]          the first x_columns of columns16
// Each output column c is multiplied by column_scale[c] (weight scale / operand scale).
//
// Accumulation: the MMA accumulator truncates toward zero inside every k-step, so a chain of
// hundreds of blocks biases the sums (kernels/tensorcore/mma_accumulation.hpp). With
// split_accumulation (the default) each group of kMmaChainBlocks blocks accumulates in a fresh
// fragment that is added to the fp32 result with round-to-nearest adds; the CPU twin's
// MmaAccumulation{true, 16, 0, kMmaChainBlocks} models it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/tensorcore/mma_accumulation.hpp"
#include "kernels/tensorcore/wmma_shape.hpp"

namespace slicestream::tensorcore::cuda {

struct BsrForwardArgs {
  const std::uint16_t* blocks = nullptr;  // fp16 bits, block_rows x 16 per block
  const int* row_ptr = nullptr;
  const int* col_index = nullptr;
  int block_row_count = 0;
  const std::uint16_t* x = nullptr;
  long long x_rows = 0;  // mapped columns of A (multiple of 16)
  int columns = 0;       // right-hand sides: a multiple of the warp tile (see below), <= 256
  const float* column_scale = nullptr;
  float* y = nullptr;
  bool split_accumulation = true;
};

struct BsrTransposedArgs {
  const std::uint16_t* blocks = nullptr;
  const int* col_ptr = nullptr;
  const int* col_blocks = nullptr;
  const int* col_block_rows = nullptr;
  int block_col_count = 0;
  const std::uint16_t* y = nullptr;
  long long y_rows = 0;
  int columns16 = 0;  // multiple of 16 (of 32 above 16), <= 256
  int x_columns = 0;  // columns written to x (<= columns16)
  const float* column_scale = nullptr;
  float* x = nullptr;
  bool split_accumulation = true;
};

// Columns a warp works on: min(32, columns); `columns` must be a multiple of it and of the
// fragment width n. Returns 0 when the combination is not supported.
int forward_warp_columns(WmmaShape shape, int columns);

void launch_bsr_forward(WmmaShape shape, const BsrForwardArgs& args, cudaStream_t stream);
void launch_bsr_transposed(WmmaShape shape, const BsrTransposedArgs& args, cudaStream_t stream);

}  // namespace slicestream::tensorcore::cuda
