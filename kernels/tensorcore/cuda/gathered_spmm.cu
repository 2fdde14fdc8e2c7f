#include "kernels/tensorcore/cuda/gathered_spmm.hpp"

#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/tensorcore/grouped_blocks.hpp"

namespace slicestream::tensorcore::cuda {

namespace {

constexpr int kTransforms = 8;
constexpr int kRowsPerWarp = 4;
constexpr int kWarps = kTransforms * kGroupRows / kRowsPerWarp;  // 16
constexpr int kThreads = kWarps * 32;
constexpr int kColumns = 32;            // operand columns per pass
constexpr int kTiles8 = kColumns / 8;   // m16n8k16 products per block
static_assert(kChunkTiles == 4 && kGroupRows == 8, "the copy layout below assumes 4 x 8 chunks");

// cp.async (sm_80+): 16 bytes global -> shared without registers; src_size 0 fills zeros.
__device__ __forceinline__ void copy_async_16(unsigned shared, const void* global, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(global),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commit_async() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int kPending>
__device__ __forceinline__ void wait_async() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}
// Four 8 x 8 fp16 matrices from shared memory, one row address per lane (lanes 8j .. 8j + 7:
// matrix j); .trans delivers them transposed (the k-major operand as mma's "col" B).
__device__ __forceinline__ void load_matrix_x4(unsigned (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
}
__device__ __forceinline__ void load_matrix_x4_trans(unsigned (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
}
// d += a b for a 16 x 16 fp16 A (row-major fragment), a 16 x 8 fp16 B, fp32 accumulation.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d = a b (no accumulator input).
__device__ __forceinline__ void mma_16816_from_zero(float (&d)[4], const unsigned (&a)[4],
                                                    unsigned b0, unsigned b1) {
  const float zero = 0.0f;
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %10, %10, %10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(zero));
}

// One stage of shared memory holds one chunk: the 8 transforms' operand tiles (8 x 4 tiles of 16
// rows x 32 columns) and up to 32 blocks. The padded rows (80 and 48 bytes) put the 8 rows of
// every ldmatrix phase into 8 different bank groups.
struct Stage {
  static constexpr int kOperandRowBytes = (kColumns + 8) * 2;  // 80
  static constexpr int kBlockRowBytes = 24 * 2;                // 48
  static constexpr int kTileBytes = 16 * kOperandRowBytes;
  static constexpr int kBlockBytes = 16 * kBlockRowBytes;
  static constexpr int kOperandBytes = kTransforms * kChunkTiles * kTileBytes;    // 40 KiB
  static constexpr int kBlocksBytes = kChunkTiles * kGroupRows * kBlockBytes;     // 24 KiB
  static constexpr int kBytes = kOperandBytes + kBlocksBytes;                      // 64 KiB
};

// What a thread needs of one chunk to stage it: the tile its operand copies read (every thread
// copies rows of one tile), where the chunk's blocks start, and the mask.
struct ChunkMeta {
  int tile = -1;
  int first_block = 0;
  unsigned mask = 0;  // its bits count the blocks
};

// The work of the groups before `group`, in units of one block's products: a chunk's staging
// (its 512 operand rows, the lookups and the barrier) costs about as much as kChunkCost blocks.
// Monotone in `group`, so CTAs split the run of groups by binary search.
constexpr long long kChunkCost = 12;
__device__ __forceinline__ long long work_before(const GatheredSpmmArgs& a, int group) {
  const int chunk = a.group_chunk[group];
  return a.chunk_block[chunk] + kChunkCost * chunk;
}

// First group in [0, group_count] whose work_before is >= work.
__device__ int first_group_from(const GatheredSpmmArgs& a, long long work) {
  int lo = 0, n = a.group_count + 1;
  while (n > 0) {
    const int half = n / 2;
    if (work_before(a, lo + half) < work) {
      lo += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return lo;
}

// Persistent CTAs, each over a contiguous run of groups holding an equal share of the work
// (work_before), so the copy pipeline runs on across group boundaries. Chunk q of the run is computed
// while the next kStages - 1 are copied; the operand rows one chunk further are looked up and the
// metadata of the chunk after that loaded meanwhile, so no load is used in the iteration that
// issued it. When a chunk starts a new group, the finished group's sums are added to the output
// first. `column0` selects the 32 operand columns of this pass.
template <int kStages>
__global__ void __launch_bounds__(kThreads, 1)
    gathered_spmm_kernel(GatheredSpmmArgs a, int column0) {
  constexpr int kAhead = kStages - 1;
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ unsigned stage_mask[kStages];
  const int thread = static_cast<int>(threadIdx.x);
  const int warp = thread >> 5;
  const int lane = thread & 31;
  const int g = warp % kTransforms;
  const int first_row = (warp / kTransforms) * kRowsPerWarp;  // of the group

  // This CTA's groups and chunks.
  const long long total_work = work_before(a, a.group_count);
  const int group_begin = first_group_from(a, total_work * blockIdx.x / gridDim.x);
  const int group_end = first_group_from(a, total_work * (blockIdx.x + 1) / gridDim.x);
  const int chunk_begin = a.group_chunk[group_begin];
  const int chunks = a.group_chunk[group_end] - chunk_begin;
  if (chunks == 0) return;  // uniform over the CTA

  // Operand copies: 4 per thread, copy i moves 16 bytes (part) of staged row i * 128 + thread / 4
  // = ((g_i * 4 + t) * 16 + k): g_i = 2 i + thread / 256, tile t = (thread / 64) % 4, k = (thread /
  // 4) % 16. Four consecutive lanes move one 64-byte row.
  const unsigned smem_base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int copy_tile = (thread >> 6) & 3;
  const int part = thread & 3;
  const unsigned in_row_bytes = static_cast<unsigned>(a.columns) * 2;
  const char* in = reinterpret_cast<const char*>(a.in) + column0 * 2 + part * 16;
  const int* source = a.source + static_cast<long long>(thread >> 8) * a.source_stride +
                      ((thread >> 2) & 15);
  const int source_step = static_cast<int>(2 * a.source_stride);  // g_i to g_i+1 (< 2^31 rows)
  const std::uint16_t* block_src = a.blocks + warp * 256 + (thread & 31) * 8;
  const unsigned operand_dst = smem_base + (thread >> 2) * Stage::kOperandRowBytes + part * 16;
  const int block_vector = thread & 31;  // blocks: 16-byte vector within a block
  const unsigned block_dst = smem_base + Stage::kOperandBytes +
                             (block_vector >> 1) * Stage::kBlockRowBytes + (block_vector & 1) * 16;

  auto load_meta = [&](int q, ChunkMeta& m) {
    if (q < chunks) {
      const int c = chunk_begin + q;
      m.tile = __ldg(a.chunk_tile + c * kChunkTiles + copy_tile);
      m.first_block = __ldg(a.chunk_block + c);
      m.mask = __ldg(a.chunk_mask + c);
    } else {
      m = ChunkMeta{};
    }
  };
  auto look_up = [&](const ChunkMeta& m, int (&src)[4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      src[i] = m.tile >= 0 ? __ldg(source + (i * source_step + m.tile * 16)) : -1;
    }
  };
  auto stage = [&](int q, const ChunkMeta& m, const int (&src)[4]) {
    const int s = q % kStages;
    if (thread == 0) stage_mask[s] = m.mask;
    const unsigned stage_base = s * Stage::kBytes;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      copy_async_16(operand_dst + stage_base + i * 128 * Stage::kOperandRowBytes,
                    in + static_cast<std::size_t>(static_cast<unsigned>(max(src[i], 0)) *
                                                  std::size_t{in_row_bytes}),
                    src[i] >= 0);
    }
    // Blocks: block u = i * 16 + warp, vector `block_vector` (row / 2, half % 2).
    const int blocks = __popc(m.mask);
    const std::uint16_t* chunk_blocks = block_src + static_cast<std::size_t>(m.first_block) * 256;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int u = i * kWarps + warp;
      if (u < blocks) {
        copy_async_16(block_dst + stage_base + u * Stage::kBlockBytes,
                      chunk_blocks + i * kWarps * 256, true);
      }
    }
  };

  // ldmatrix row addresses of this lane: A (a block, 16 x 16) rows lane % 16, columns 8 (lane /
  // 16); B (an operand tile, 16 k x 32 columns, transposed) k = 8 ((lane / 8) % 2) + lane % 8,
  // columns 8 (lane / 16) (+ 16 for the second half).
  const unsigned a_lane = (lane & 15) * Stage::kBlockRowBytes + (lane >> 4) * 16;
  const unsigned b_lane = (((lane >> 3) & 1) * 8 + (lane & 7)) * Stage::kOperandRowBytes +
                          (lane >> 4) * 16 + g * kChunkTiles * Stage::kTileBytes;

  // Accumulators: sum[r][j] is row first_row + r, columns 8 j .. 8 j + 7 in mma's layout (lane / 4
  // and lane / 4 + 8, columns 2 (lane % 4) + 0/1).
  float sum[kRowsPerWarp][kTiles8][4];
  auto clear = [&] {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
      for (int j = 0; j < kTiles8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          sum[r][j][e] = 0.0f;
  };
  // Adds the group's touched rows to the output: each output row receives exactly 8 (row, g)
  // adds over the grid, fp32 atomics. Lane columns are operand columns column0 + 8 j + 2 (lane %
  // 4) + e: slice c, or the compensating column of a slice.
  auto flush = [&](int group, unsigned touched) {
    const int* target = a.target + g * a.target_stride +
                        (static_cast<long long>(group) * kGroupRows + first_row) * 16 + (lane >> 2);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      if (((touched >> r) & 1u) == 0) continue;
      const int out_row[2] = {__ldg(target + r * 16), __ldg(target + r * 16 + 8)};
#pragma unroll
      for (int j = 0; j < kTiles8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int column = column0 + 8 * j + 2 * (lane & 3) + e;
          int slice = -1;
          if (column < a.slices) {
            slice = column;
          } else if (a.lo_offset > 0 && column >= a.lo_offset && column < a.lo_offset + a.slices) {
            slice = column - a.lo_offset;
          }
          if (slice < 0) continue;
          const float scale = __ldg(a.column_scale + column);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            if (out_row[h] < 0) continue;
            atomicAdd(a.out + static_cast<std::size_t>(out_row[h]) * a.slices + slice,
                      sum[r][j][2 * h + e] * scale);
          }
        }
      }
    }
  };

  ChunkMeta next, after;
  int src[4];
#pragma unroll
  for (int q = 0; q < kAhead; ++q) {
    load_meta(q, next);
    look_up(next, src);
    if (q < chunks) stage(q, next, src);
    commit_async();
  }
  load_meta(kAhead, next);
  look_up(next, src);  // chunk kAhead
  load_meta(kAhead + 1, after);

  int group = group_begin;
  int group_chunk_end = a.group_chunk[group + 1];
  while (group_chunk_end <= chunk_begin) group_chunk_end = a.group_chunk[++group + 1];
  unsigned touched = 0;  // rows (bits 0-3) of the group that received a block
  clear();
  for (int q = 0; q < chunks; ++q) {
    wait_async<kAhead - 1>();  // this thread's copies of chunk q have landed ...
    __syncthreads();           // ... and everybody's; everybody is done with chunk q - 1's stage
    if (q + kAhead < chunks) stage(q + kAhead, next, src);
    commit_async();  // possibly empty: one group per iteration keeps the wait count exact
    next = after;
    look_up(next, src);                // chunk q + kAhead + 1
    load_meta(q + kAhead + 2, after);  // chunk q + kAhead + 2

    if (chunk_begin + q >= group_chunk_end) {  // a new group starts: the last one is complete
      flush(group, touched);
      touched = 0;
      clear();
      do {
        group_chunk_end = a.group_chunk[++group + 1];
      } while (group_chunk_end <= chunk_begin + q);
    }

    const int s = q % kStages;
    const unsigned mask = stage_mask[s];
    const unsigned blocks = smem_base + s * Stage::kBytes + Stage::kOperandBytes + a_lane;
    const unsigned operands = smem_base + s * Stage::kBytes + b_lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = first_row + r;
      unsigned tiles = (mask >> row) & 0x01010101u;  // bit 8 t: a block in tile t
      if (tiles == 0) continue;                      // warp-uniform
      touched |= 1u << r;
      // This row's blocks of the chunk: one accumulation chain, started from zero by the first
      // block's products and added to the sum afterwards.
      unsigned fa[4], fb[4], fc[4];
      auto load_next = [&] {  // the fragments of the row's next block in the chunk
        const int bit = (__ffs(tiles) - 1) + row;
        tiles &= tiles - 1;
        const int index = __popc(mask & ((1u << bit) - 1u));  // blocks are stored in bit order
        load_matrix_x4(fa, blocks + index * Stage::kBlockBytes);
        const unsigned tile = operands + (bit / kGroupRows) * Stage::kTileBytes;
        load_matrix_x4_trans(fb, tile);
        load_matrix_x4_trans(fc, tile + 32);
      };
      float part_sum[kTiles8][4];
      load_next();
      mma_16816_from_zero(part_sum[0], fa, fb[0], fb[1]);
      mma_16816_from_zero(part_sum[1], fa, fb[2], fb[3]);
      mma_16816_from_zero(part_sum[2], fa, fc[0], fc[1]);
      mma_16816_from_zero(part_sum[3], fa, fc[2], fc[3]);
      while (tiles != 0) {
        load_next();
        mma_16816(part_sum[0], fa, fb[0], fb[1]);
        mma_16816(part_sum[1], fa, fb[2], fb[3]);
        mma_16816(part_sum[2], fa, fc[0], fc[1]);
        mma_16816(part_sum[3], fa, fc[2], fc[3]);
      }
#pragma unroll
      for (int j = 0; j < kTiles8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          sum[r][j][e] = __fadd_rn(sum[r][j][e], part_sum[j][e]);
    }
  }
  flush(group, touched);
  wait_async<0>();  // nothing is pending (the last groups were empty); leave no copy behind
}

// Three chunks in flight (two being copied while one is computed): 192 KiB of shared memory,
// one CTA of 16 warps per SM.
constexpr int kPipelineStages = 3;
// CTAs per SM over the kernel's lifetime (one resident at a time): the shares' remaining
// imbalance becomes a tail of about an eighth of a share, against a pipeline start per share.
constexpr int kCtasPerMultiprocessor = 8;

int multiprocessors() {
  int device = 0, count = 0;
  SLICESTREAM_CUDA_CHECK(cudaGetDevice(&device));
  SLICESTREAM_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

template <int kStages>
void launch_pass(const GatheredSpmmArgs& a, int column0, cudaStream_t stream) {
  constexpr int bytes = kStages * Stage::kBytes;
  // Above 48 KB of dynamic shared memory a kernel must opt in, once per process.
  static const bool configured = [] {
    SLICESTREAM_CUDA_CHECK(cudaFuncSetAttribute(
        gathered_spmm_kernel<kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)configured;
  static const int per_device = kCtasPerMultiprocessor * multiprocessors();
  const int ctas = std::min(a.ctas > 0 ? a.ctas : per_device, a.group_count);
  gathered_spmm_kernel<kStages><<<ctas, kThreads, bytes, stream>>>(a, column0);
  SLICESTREAM_CUDA_CHECK_LAUNCH("gathered_spmm_kernel");
}

}  // namespace

void launch_gathered_spmm(const GatheredSpmmArgs& args, cudaStream_t stream) {
  const int real = args.slices * (args.lo_offset > 0 ? 2 : 1);
  if (args.slices <= 0 || real > args.columns ||
      (args.lo_offset > 0 && args.lo_offset + args.slices > args.columns)) {
    throw std::invalid_argument("gathered SpMM: " + std::to_string(args.slices) +
                                " slices do not fit " + std::to_string(args.columns) + " columns");
  }
  if (args.columns != 32 && args.columns != 64) {
    throw std::invalid_argument("gathered SpMM: " + std::to_string(args.columns) +
                                " columns unsupported (32 or 64)");
  }
  if (args.group_count == 0) return;
  for (int column0 = 0; column0 < args.columns; column0 += kColumns)
    launch_pass<kPipelineStages>(args, column0, stream);
}

}  // namespace slicestream::tensorcore::cuda
