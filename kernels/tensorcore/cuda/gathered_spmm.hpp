// The gathered symmetric SpMM (kernels/tensorcore/symmetric_gather.hpp) on the tensor cores:
// for every transform g and block row i of 16 x 16 fp16 blocks,
//   out[target[g][i], s] += sum_k block[i, k] in[source[g][k], s]      (fp32 atomics)
// Forward: the blocks of A_oct, source = pixel_of_col, target = ray_of_row; backward: the blocks
// of A_oct^T with the tables swapped. One product column per slice (plus the compensating lo
// columns), so 32 slices are 32 columns where the column form of the symmetry needs 256.
//
// Work split: the blocks are grouped (kernels/tensorcore/grouped_blocks.hpp) by 8 block rows;
// persistent CTAs (8 per SM over the launch) of 16 warps each take a run of groups with an equal
// share of the work; warp w applies transform w % 8 to rows 4 (w / 8) .. 4 (w / 8) + 3 of the
// group. Per chunk (8 operand tiles) the CTA stages the 8 transforms' operand rows (32 columns)
// and the chunk's blocks once with cp.async into XOR-swizzled shared memory (one chunk copied
// while one is computed; the row indices and chunk metadata are copied two chunks ahead), and
// every warp multiplies its rows' blocks of the chunk with its transform's tiles (ldmatrix,
// mma.sync m16n8k16). So an operand tile is read from L2 once per group instead of once per
// block. A row's blocks of a chunk are consecutive (row-major mask bits), so a warp walks them with
// a running index; they form accumulation chains of at most 4 consecutive blocks (split
// accumulation as in bsr_spmm). 64 columns run as two passes of 32.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace slicestream::tensorcore::cuda {

struct GatheredSpmmArgs {
  // The grouped blocks (GroupedBlocks, uploaded).
  const std::uint16_t* blocks = nullptr;      // fp16 bits, 16 x 16 per block, in chunk order
  const int* group_chunk = nullptr;           // groups + 1
  const int* chunk_tile = nullptr;            // chunks x kChunkTiles
  const std::uint64_t* chunk_mask = nullptr;  // chunks
  const int* chunk_block = nullptr;           // chunks + 1
  int group_count = 0;
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
  int ctas = 0;          // persistent CTAs; 0: one per multiprocessor (tests use a few)
};

// Throws std::invalid_argument for unsupported column counts.
void launch_gathered_spmm(const GatheredSpmmArgs& args, cudaStream_t stream);

}  // namespace slicestream::tensorcore::cuda
