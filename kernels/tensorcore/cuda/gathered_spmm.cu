#include "kernels/tensorcore/cuda/gathered_spmm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_probe.hpp"
#include "kernels/tensorcore/grouped_blocks.hpp"
#include "kernels/tensorcore/mma_accumulation.hpp"

namespace slicestream::tensorcore::cuda {

namespace {

constexpr int kTransforms = 8;
constexpr int kRowsPerWarp = 4;
constexpr int kWarps = kTransforms * kGroupRows / kRowsPerWarp;  // 16
constexpr int kThreads = kWarps * 32;
constexpr int kColumns = 32;           // operand columns per pass
constexpr int kTiles8 = kColumns / 8;  // m16n8k16 products per block
static_assert(kChunkTiles == 8 && kGroupRows == 8, "the copy layout below assumes 8 x 8 chunks");
static_assert(kRowsPerWarp * kChunkTiles == 32, "a warp's rows are one 32-bit half of the mask");
static_assert(chunk_bit(1, 0) == kChunkTiles, "row-major mask bits (grouped_blocks.hpp)");

// cp.async (sm_80+): 16 bytes global -> shared without registers; src_size 0 fills zeros.
__device__ __forceinline__ void copy_async_16(unsigned shared, const void* global, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(global),
               "r"(valid ? 16 : 0));
}
// 16 bytes of operand row `row` (at base + row * row_bytes) into shared memory; row < 0 fills zeros
// (ignore-src). One mad.wide and one compare per copy: these copies dominate a chunk's staging.
__device__ __forceinline__ void copy_row_async_16(unsigned shared, const char* base, int row,
                                                  unsigned row_bytes) {
  asm volatile(
      "{\n"
      "  .reg .pred absent;\n"
      "  .reg .u64 address;\n"
      "  setp.lt.s32 absent, %2, 0;\n"
      "  mad.wide.u32 address, %3, %4, %1;\n"
      "  cp.async.cg.shared.global [%0], [address], 16, absent;\n"
      "}\n" ::"r"(shared),
      "l"(base), "r"(row), "r"(max(row, 0)), "r"(row_bytes));
}
// 4- and 8-byte cp.async (through L1), for the look-ups of a chunk's operand rows and metadata.
__device__ __forceinline__ void copy_async_4(void* shared, const void* global) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(shared))),
               "l"(global));
}
__device__ __forceinline__ void copy_async_8(void* shared, const void* global) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(shared))),
               "l"(global));
}
__device__ __forceinline__ void commit_async() {
  asm volatile("cp.async.commit_group;\n" ::);
}
__device__ __forceinline__ void wait_async_all() {
  asm volatile("cp.async.wait_group 0;\n" ::);
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

// One stage of shared memory holds one chunk: the 8 transforms' operand tiles (8 x 8 tiles of 16
// rows x 32 columns, 64-byte rows) and up to 64 blocks (32-byte rows), unpadded. The 16-byte
// units of each row are XOR-swizzled by the row (operand_unit, block_unit) so that the 8 rows
// every ldmatrix phase reads fall into 8 different bank groups.
struct Stage {
  static constexpr int kOperandRowBytes = kColumns * 2;  // 64
  static constexpr int kBlockRowBytes = 16 * 2;          // 32
  static constexpr int kTileBytes = 16 * kOperandRowBytes;
  static constexpr int kBlockBytes = 16 * kBlockRowBytes;
  static constexpr int kOperandBytes = kTransforms * kChunkTiles * kTileBytes;  // 64 KiB
  static constexpr int kBlocksBytes = kChunkTiles * kGroupRows * kBlockBytes;   // 32 KiB
  static constexpr int kBytes = kOperandBytes + kBlocksBytes;                   // 96 KiB
  // Byte offset of 16-byte unit `unit` of row `row` within a tile or block.
  static __device__ __forceinline__ unsigned operand_unit(int row, int unit) {
    return row * kOperandRowBytes + ((unit ^ ((row >> 1) & 3)) << 4);
  }
  static __device__ __forceinline__ unsigned block_unit(int row, int unit) {
    return row * kBlockRowBytes + ((unit ^ ((row >> 2) & 1)) << 4);
  }
};

// The work of the groups before `group`, in units of one block's products: a chunk's staging
// (its 1024 operand rows, the look-ups and the barrier) costs about as much as kChunkCost blocks.
// Monotone in `group`, so CTAs split the run of groups by searching it (cta_group_run).
constexpr long long kChunkCost = 20;
__device__ __forceinline__ long long work_before(const GatheredSpmmArgs& a, int group) {
  const int chunk = a.group_chunk[group];
  return a.chunk_block[chunk] + kChunkCost * chunk;
}

// This CTA's run of groups [x, y): the first groups whose work_before reaches the CTA's share
// bounds total * blockIdx.x / gridDim.x and total * (blockIdx.x + 1) / gridDim.x. The CTA searches
// both at once, half its threads per bound, each round probing evenly spaced groups of the
// remaining interval and keeping the one step where the work crosses the bound: two rounds of
// dependent loads at 512^2 where a binary search chains about 24 per bound, which left the SM
// idle at the start of every CTA. Every thread of the CTA must call it.
__device__ int2 cta_group_run(const GatheredSpmmArgs& a) {
  const long long total = work_before(a, a.group_count);
  const int half = static_cast<int>(blockDim.x) / 2;
  const int bound = static_cast<int>(threadIdx.x) >= half ? 1 : 0;
  const int probe = static_cast<int>(threadIdx.x) - bound * half;
  const long long target =
      total * (static_cast<long long>(blockIdx.x) + bound) / static_cast<long long>(gridDim.x);
  // Per bound the answer lies in (lo, hi]; work_before(hi) >= the bound's target throughout.
  int2 lo = make_int2(-1, -1);
  int2 hi = make_int2(a.group_count, a.group_count);
  while (hi.x - lo.x > 1 || hi.y - lo.y > 1) {  // uniform over the CTA
    const int2 step = make_int2((hi.x - lo.x + half - 1) / half, (hi.y - lo.y + half - 1) / half);
    const int candidate = bound == 0 ? lo.x + (probe + 1) * step.x : lo.y + (probe + 1) * step.y;
    const bool below = candidate < (bound == 0 ? hi.x : hi.y) && work_before(a, candidate) < target;
    // The probes below the target are a prefix (work_before is monotone): count them.
    const int below_x = __syncthreads_count(bound == 0 && below);
    const int below_y = __syncthreads_count(bound == 1 && below);
    hi = make_int2(min(hi.x, lo.x + (below_x + 1) * step.x),
                   min(hi.y, lo.y + (below_y + 1) * step.y));
    lo = make_int2(lo.x + below_x * step.x, lo.y + below_y * step.y);
  }
  return hi;
}

// Persistent CTAs, each over a contiguous run of groups holding an equal share of the work
// (work_before), so the copy pipeline runs on across group boundaries. Chunk q of the run is
// computed while chunk q + 1 is copied, chunk q + 2's operand-row indices and metadata are
// copied into their slot and chunk q + 3's tiles loaded, so no load is used in the iteration
// that issued it. When a chunk starts a new group, the finished group's sums are added to the
// output first. `column0` selects the 32 operand columns of this pass.
__global__ void __launch_bounds__(kThreads, 1)
    gathered_spmm_kernel(GatheredSpmmArgs a, int column0) {
  constexpr int kStages = 2;                             // one chunk copied while one is computed
  constexpr int kRows = kTransforms * kChunkTiles * 16;  // staged operand rows per chunk
  extern __shared__ __align__(128) unsigned char smem[];
  // Chunk q's operand rows (source indices) and blocks (first block, mask), copied two chunks
  // ahead into slot q % 4. Staged row R's index is at [R % 128][R / 128]: the 8 rows (one per
  // transform) a thread copies are adjacent, two 16-byte loads.
  __shared__ __align__(16) int source_slot[4][kRows / kTransforms][kTransforms];
  __shared__ int first_block_slot[4];
  __shared__ unsigned long long mask_slot[4];
  const int thread = static_cast<int>(threadIdx.x);
  const int warp = thread >> 5;
  const int lane = thread & 31;
  const int g = warp % kTransforms;
  const int first_row = (warp / kTransforms) * kRowsPerWarp;  // of the group

  // This CTA's groups and chunks.
  const int2 run = cta_group_run(a);
  const int group_begin = run.x;
  const int group_end = run.y;
  const int chunk_begin = a.group_chunk[group_begin];
  const int chunks = a.group_chunk[group_end] - chunk_begin;
  if (chunks == 0) return;  // uniform over the CTA

  // Look-ups: thread looks up staged rows thread and thread + 512, row (g * 8 + t) * 16 + k:
  // tile t = (thread / 16) % 8, k = thread % 16, g = thread / 128 (+ 4).
  const int* source = a.source + (thread >> 7) * a.source_stride + (thread & 15);
  const int source_half = static_cast<int>(4 * a.source_stride);  // < 2^31 (launch checks)
  const int lookup_tile = (thread >> 4) & 7;
  // Operand copies: 8 per thread, copy i moves 16-byte unit `part` of staged row i * 128 +
  // thread / 4 = (i * 8 + t) * 16 + k with t = (thread / 64) % 8, k = (thread / 4) % 16. Four
  // consecutive lanes move one 64-byte row.
  const unsigned smem_base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int part = thread & 3;
  const unsigned in_row_bytes = static_cast<unsigned>(a.columns) * 2;
  const char* in = reinterpret_cast<const char*>(a.in) + column0 * 2 + part * 16;
  const int copy_tile = (thread >> 6) & 7;
  const unsigned long long copy_tile_bits = tile_bits(copy_tile);
  const unsigned operand_dst =
      smem_base + copy_tile * Stage::kTileBytes + Stage::operand_unit((thread >> 2) & 15, part);
  // Block copies: 4 per thread, block i * 16 + warp, unit lane % 2 of its row lane / 2.
  const std::uint16_t* block_src = a.blocks + warp * 256 + lane * 8;
  const unsigned block_dst = smem_base + Stage::kOperandBytes + warp * Stage::kBlockBytes +
                             Stage::block_unit(lane >> 1, lane & 1);

  // Chunk q's tile of this thread's look-ups (-1 past the run's end).
  auto load_tile = [&](int q) {
    return q < chunks ? __ldg(a.chunk_tile + (chunk_begin + q) * kChunkTiles + lookup_tile) : -1;
  };
  // Copies chunk q's operand row indices and metadata into slot q % 4 (cp.async, part of the
  // caller's next commit group). Rows of tiles past the chunk's last are never staged.
  auto look_up = [&](int q, int tile) {
    if (tile >= 0) {
      int* slot = &source_slot[q & 3][thread & 127][thread >> 7];  // rows thread, thread + 512
      copy_async_4(slot, source + tile * 16);
      copy_async_4(slot + kTransforms / 2, source + (source_half + tile * 16));
    }
    if (thread == 0 && q < chunks) {
      copy_async_4(&first_block_slot[q & 3], a.chunk_block + chunk_begin + q);
      copy_async_8(&mask_slot[q & 3], a.chunk_mask + chunk_begin + q);
    }
  };
  auto stage = [&](int q) {
    const unsigned stage_base = (q % kStages) * Stage::kBytes;
    const unsigned long long mask = mask_slot[q & 3];
    if ((mask & copy_tile_bits) != 0) {  // the tile exists (it holds blocks)
      const int4* slot = reinterpret_cast<const int4*>(source_slot[q & 3][thread >> 2]);
      const int4 low = slot[0], high = slot[1];
      const int rows[kTransforms] = {low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w};
#pragma unroll
      for (int i = 0; i < kTransforms; ++i) {
        copy_row_async_16(operand_dst + stage_base + i * kChunkTiles * Stage::kTileBytes, in,
                          rows[i], in_row_bytes);
      }
    }
    const int blocks = __popcll(mask);
    const std::uint16_t* chunk_blocks =
        block_src + static_cast<std::size_t>(first_block_slot[q & 3]) * 256;
#pragma unroll
    for (int i = 0; i < kChunkTiles * kGroupRows / kWarps; ++i) {
      if (i * kWarps + warp < blocks) {
        copy_async_16(block_dst + stage_base + i * kWarps * Stage::kBlockBytes,
                      chunk_blocks + i * kWarps * 256, true);
      }
    }
  };

  // ldmatrix row addresses of this lane: A (a block, 16 x 16) row lane % 16, unit lane / 16; B
  // (an operand tile, 16 k x 32 columns, transposed) k = 8 ((lane / 8) % 2) + lane % 8, units
  // lane / 16 (columns 0-15) and 2 + lane / 16 (columns 16-31).
  const unsigned a_lane = Stage::block_unit(lane & 15, lane >> 4);
  const int b_k = ((lane >> 3) & 1) * 8 + (lane & 7);
  const unsigned b_lane = g * kChunkTiles * Stage::kTileBytes + Stage::operand_unit(b_k, lane >> 4);
  const unsigned c_lane =
      g * kChunkTiles * Stage::kTileBytes + Stage::operand_unit(b_k, 2 + (lane >> 4));

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

  // Prologue: chunks 0 and 1 looked up, chunk 0 staged; chunk 2's tile loaded.
  look_up(0, load_tile(0));
  look_up(1, load_tile(1));
  commit_async();
  int tile_ahead = load_tile(2);
  wait_async_all();
  __syncthreads();
  stage(0);
  commit_async();

  int group = group_begin;
  int group_chunk_end = a.group_chunk[group + 1];
  while (group_chunk_end <= chunk_begin)
    group_chunk_end = a.group_chunk[++group + 1];
  unsigned touched = 0;  // rows (bits 0-3) of the group that received a block
  clear();
  for (int q = 0; q < chunks; ++q) {
    wait_async_all();  // this thread's copies of chunk q have landed ...
    __syncthreads();   // ... and everybody's; everybody is done with chunk q - 1's stage
    if (q + 1 < chunks) stage(q + 1);
    look_up(q + 2, tile_ahead);
    commit_async();
    tile_ahead = load_tile(q + 3);

    if (chunk_begin + q >= group_chunk_end) {  // a new group starts: the last one is complete
      flush(group, touched);
      touched = 0;
      clear();
      do {
        group_chunk_end = a.group_chunk[++group + 1];
      } while (group_chunk_end <= chunk_begin + q);
    }

    // The warp's rows are one 32-bit half of the mask (row-major bits, 8 per row); their blocks
    // follow in bit order, after the low half's when the warp has rows 4-7.
    const int s = q % kStages;
    const unsigned long long mask = mask_slot[q & 3];
    const unsigned rows_bits = static_cast<unsigned>(mask >> (first_row * kChunkTiles));
    unsigned block =
        smem_base + s * Stage::kBytes + Stage::kOperandBytes + a_lane +
        (first_row == 0 ? 0u : __popc(static_cast<unsigned>(mask))) * Stage::kBlockBytes;
    const unsigned operands = smem_base + s * Stage::kBytes;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      unsigned tiles = (rows_bits >> (r * kChunkTiles)) & 0xffu;  // the row's tiles still to do
      if (tiles == 0) continue;                                   // uniform over the warp
      touched |= 1u << r;
      // The row's blocks of the chunk in accumulation chains of at most kMmaChainBlocks (4)
      // consecutive blocks, each started from zero by its first block's products and added to
      // the sum afterwards.
      unsigned fa[4], fb[4], fc[4];
      auto load_next = [&] {  // the fragments of the row's next block in the chunk
        const unsigned tile = operands + (__ffs(tiles) - 1) * Stage::kTileBytes;
        tiles &= tiles - 1;
        load_matrix_x4(fa, block);
        block += Stage::kBlockBytes;
        load_matrix_x4_trans(fb, tile + b_lane);
        load_matrix_x4_trans(fc, tile + c_lane);
      };
      float part_sum[kTiles8][4];
      while (tiles != 0) {
        load_next();
        mma_16816_from_zero(part_sum[0], fa, fb[0], fb[1]);
        mma_16816_from_zero(part_sum[1], fa, fb[2], fb[3]);
        mma_16816_from_zero(part_sum[2], fa, fc[0], fc[1]);
        mma_16816_from_zero(part_sum[3], fa, fc[2], fc[3]);
#pragma unroll
        for (int k = 1; k < kMmaChainBlocks; ++k) {
          if (tiles == 0) break;
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
  }
  flush(group, touched);
  wait_async_all();  // the last commit groups are empty; leave no copy in flight at exit anyway
}

// CTAs per SM over the kernel's lifetime (one resident at a time): the shares' remaining
// imbalance becomes a tail of about an eighth of a share, against a pipeline start per share.
constexpr int kCtasPerMultiprocessor = 8;

void launch_pass(const GatheredSpmmArgs& a, int column0, cudaStream_t stream) {
  constexpr int bytes = 2 * Stage::kBytes;
  // Above 48 KB of dynamic shared memory a kernel must opt in, once per process.
  static const bool configured = [] {
    SLICESTREAM_CUDA_CHECK(cudaFuncSetAttribute(
        gathered_spmm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)configured;
  const int ctas = std::min(
      a.ctas > 0 ? a.ctas
                 : kCtasPerMultiprocessor * ::slicestream::cuda::current_device_multiprocessors(),
      a.group_count);
  gathered_spmm_kernel<<<ctas, kThreads, bytes, stream>>>(a, column0);
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
  if (4 * args.source_stride >= (1LL << 31)) {
    throw std::invalid_argument("gathered SpMM: operand tables too large for 32-bit offsets");
  }
  if (args.group_count == 0) return;
  for (int column0 = 0; column0 < args.columns; column0 += kColumns)
    launch_pass(args, column0, stream);
}

}  // namespace slicestream::tensorcore::cuda
