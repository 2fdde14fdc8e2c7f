// The gathered symmetric SpMM (kernels/tensorcore/symmetric_gather.hpp) on the tensor cores:
// for every transform g and block row i of 16 x 16 fp16 blocks,
//   out[target[g][i], s] += sum_k block[i, k] in[source[g][k], s]      (fp32 atomics)
// Forward: the blocks of A_oct, source = pixel_of_col, target = ray_of_row; backward: the blocks
// of A_oct^T with the tables swapped. One product column per slice (plus the compensating lo
// columns), so 32 slices are 32 columns where the column form of the symmetry needs 256.
//
// Work split: one CTA per block row, one warp per transform. The CTA copies the row's blocks
// once into shared memory for its 8 warps; each warp gathers its operand rows through its table
// (16 per block) next to them, both with cp.async, 4 blocks per stage in a two-stage pipeline,
// and loads WMMA fragments from there. Accumulation is split every 4 blocks (kMmaChainBlocks,
// as in bsr_spmm.hpp); the kernels always split.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace slicestream::tensorcore::cuda {

struct GatheredSpmmArgs {
  const std::uint16_t* blocks = nullptr;  // fp16 bits, 16 x 16 per block, row-major
  const int* row_ptr = nullptr;
  const int* col_index = nullptr;
  int block_row_count = 0;
  const int* source = nullptr;        // [8][source_stride]: operand row of each k, -1: zero
  long long source_stride = 0;        // mapped k extent (block columns x 16)
  const int* target = nullptr;        // [8][target_stride]: output row of each row, -1: none
  long long target_stride = 0;        // mapped rows (block rows x 16)
  const std::uint16_t* in = nullptr;  // fp16 operand rows of `columns` values
  int columns = 0;                    // 32 or 64
  int slices = 0;                     // output columns: column s (+ column lo_offset + s)
  int lo_offset = 0;                  // compensating columns, 0 when none
  const float* column_scale = nullptr;
  float* out = nullptr;  // [rows][slices], accumulated into (zero it first)
};

// Throws std::invalid_argument for unsupported column counts.
void launch_gathered_spmm(const GatheredSpmmArgs& args, cudaStream_t stream);

}  // namespace slicestream::tensorcore::cuda
