#include "kernels/tensorcore/cuda/gathered_spmm.hpp"

#include <cuda_fp16.h>
#include <mma.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/tensorcore/mma_accumulation.hpp"

namespace slicestream::tensorcore::cuda {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTransforms = 8;
static_assert(kWarps == kTransforms, "one warp per transform");

// cp.async (sm_80+): 16 bytes global -> shared without registers; src_size 0 fills zeros. .ca
// keeps the line in L1, where the CTA's other warps find the same blocks and operand rows.
__device__ __forceinline__ void copy_async_16(void* shared, const void* global, bool valid) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(global),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commit_async() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int kPending>
__device__ __forceinline__ void wait_async() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// The pipeline's shape: kBlocks blocks per stage (16 kBlocks staged operand rows, kBlocks / 2
// per lane; also the length of the accumulation chains, split accumulation as in bsr_spmm), and
// kStages stages in shared memory (kStages - 1 groups in flight while one is computed).
template <int kFrags, int kBlocks, int kStages>
struct Pipeline {
  static constexpr int C = 16 * kFrags;
  static constexpr int kRowsPerLane = kBlocks / 2;
  static constexpr int kBlockLd = 24;  // padded rows: fragment loads hit 8 bank groups
  static constexpr int kOperandLd = C + 8;
  static constexpr int kResultLd = C + 8;  // fp32
  static constexpr int kBlockHalves = kBlocks * 16 * kBlockLd;
  static constexpr int kOperandHalves = kBlocks * 16 * kOperandLd;
  static constexpr int kBytes = kStages * (kBlockHalves + kWarps * kOperandHalves) * 2;
  static_assert(kBlocks % 2 == 0 && kBlocks <= kMmaChainBlocks, "2 or 4 blocks per stage");
  static_assert(kStages * kOperandHalves * 2 >= 16 * kResultLd * 4,
                "the result tile fits a warp's stages");
  static __device__ __half* blocks(unsigned char* smem, int stage) {
    return reinterpret_cast<__half*>(smem) + stage * kBlockHalves;
  }
  static __device__ __half* operands(unsigned char* smem, int warp, int stage) {
    return reinterpret_cast<__half*>(smem) + kStages * kBlockHalves +
           (kStages * warp + stage) * kOperandHalves;
  }
};

// One CTA per block row; warp w applies transform w. The CTA copies the row's blocks once for
// its 8 warps; each warp gathers its operand rows (staged row i = block i / 16, k = i % 16) through
// its table. Group q (kBlocks blocks) is computed while the next kStages - 1 are copied; the
// operand rows one group further are looked up and the block columns of the group after that
// loaded meanwhile, so no load is used in the iteration that issued it.
template <int kFrags, int kBlocks, int kStages>
__global__ void __launch_bounds__(kThreads) gathered_spmm_kernel(GatheredSpmmArgs a) {
  using P = Pipeline<kFrags, kBlocks, kStages>;
  constexpr int C = P::C;
  constexpr int kAhead = kStages - 1;
  constexpr int kVecPerRow = C / 8;              // 16-byte vectors per operand row
  constexpr int kRowsPerCopy = 32 / kVecPerRow;  // operand rows per copy instruction
  using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  extern __shared__ __align__(128) unsigned char smem[];
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int thread = static_cast<int>(threadIdx.x);
  const int g = warp;
  const int block_row = static_cast<int>(blockIdx.x);
  const int begin = a.row_ptr[block_row];
  const int count = a.row_ptr[block_row + 1] - begin;
  if (count == 0) return;  // adds nothing (uniform over the CTA)
  const int groups = (count + kBlocks - 1) / kBlocks;
  const uint4* in = reinterpret_cast<const uint4*>(a.in);
  const int* source = a.source + g * a.source_stride + (lane & 15);
  const int* columns = a.col_index + begin + (lane >> 4);

  // Per-thread constants of the copies. Blocks: threads 0 .. 32 kBlocks - 1, one 16-byte vector
  // each (block row v / 2, half v % 2). Operand rows: copy t moves rows t kRowsPerCopy +
  // row_in_copy, vector `part`; within each 8-lane phase (one shared-memory wavefront) the rows
  // fall into 8 different bank groups with the padded stride (C = 32: rows j and j + 4; C = 64: one
  // row).
  const bool copies_block = thread < kBlocks * 32;
  const int block_u = thread >> 5;
  const int block_dst = (block_u * 16 + ((thread & 31) >> 1)) * P::kBlockLd + (thread & 1) * 8;
  const __half* block_src = reinterpret_cast<const __half*>(a.blocks) +
                            static_cast<std::size_t>(begin) * 256 + (thread & 31) * 8 +
                            block_u * 256;
  const int row_in_copy = (lane >> 3) + 4 * ((lane & 7) / kVecPerRow);
  const int part = lane % kVecPerRow;

  // The operand rows of group q for this lane's staged rows lane + 32 h.
  auto look_up = [&](const int(&col)[P::kRowsPerLane], int(&src)[P::kRowsPerLane]) {
#pragma unroll
    for (int h = 0; h < P::kRowsPerLane; ++h)
      src[h] = col[h] >= 0 ? __ldg(source + col[h] * 16) : -1;
  };
  auto load_columns = [&](int q, int(&col)[P::kRowsPerLane]) {
#pragma unroll
    for (int h = 0; h < P::kRowsPerLane; ++h) {
      const int i = q * kBlocks + 2 * h;  // + lane / 16 in `columns`
      col[h] = i + (lane >> 4) < count ? __ldg(columns + i) : -1;
    }
  };
  auto stage = [&](int q, const int(&src)[P::kRowsPerLane]) {
    const int s = q % kStages;
    if (copies_block) {
      const bool valid = q * kBlocks + block_u < count;  // zeros past the row's end
      copy_async_16(P::blocks(smem, s) + block_dst,
                    valid ? block_src + static_cast<std::size_t>(q) * kBlocks * 256 : block_src,
                    valid);
    }
    __half* operand = P::operands(smem, warp, s) + part * 8;
#pragma unroll
    for (int t = 0; t < 16 * kBlocks / kRowsPerCopy; ++t) {
      const int row = t * kRowsPerCopy + row_in_copy;  // row / 32 == t * kRowsPerCopy / 32
      const int r = __shfl_sync(0xffffffffu, src[t * kRowsPerCopy / 32], row & 31);
      copy_async_16(operand + row * P::kOperandLd,
                    in + static_cast<std::size_t>(r >= 0 ? r : 0) * kVecPerRow + part, r >= 0);
    }
  };

  int col[P::kRowsPerLane];
  int src[P::kRowsPerLane];
#pragma unroll
  for (int q = 0; q < kAhead; ++q) {
    load_columns(q, col);
    look_up(col, src);
    if (q < groups) stage(q, src);
    commit_async();
  }
  load_columns(kAhead, col);
  look_up(col, src);              // group kAhead
  load_columns(kAhead + 1, col);  // group kAhead + 1

  Accumulator sum[kFrags], part_sum[kFrags];
#pragma unroll
  for (int f = 0; f < kFrags; ++f)
    wmma::fill_fragment(sum[f], 0.0f);
  for (int q = 0; q < groups; ++q) {
    wait_async<kAhead - 1>();  // this thread's copies of group q have landed ...
    __syncthreads();           // ... and everybody's; everybody is done with group q - 1's stage
    if (q + kAhead < groups) stage(q + kAhead, src);
    commit_async();     // possibly empty: one group per iteration keeps the wait count exact
    look_up(col, src);  // group q + kAhead + 1
    load_columns(q + kAhead + 2, col);  // group q + kAhead + 2
    const __half* block_stage = P::blocks(smem, q % kStages);
    const __half* operand_stage = P::operands(smem, warp, q % kStages);
    // Blocks past the row's end are zeros: no branches. One accumulation chain per group.
#pragma unroll
    for (int u = 0; u < kBlocks; ++u) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
      wmma::load_matrix_sync(fa, block_stage + u * 16 * P::kBlockLd, P::kBlockLd);
#pragma unroll
      for (int f = 0; f < kFrags; ++f) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
        wmma::load_matrix_sync(fb, operand_stage + u * 16 * P::kOperandLd + f * 16, P::kOperandLd);
        if (u == 0) {
          wmma::fill_fragment(part_sum[f], 0.0f);
        }
        wmma::mma_sync(part_sum[f], fa, fb, part_sum[f]);
      }
    }
#pragma unroll
    for (int f = 0; f < kFrags; ++f) {
#pragma unroll
      for (int i = 0; i < part_sum[f].num_elements; ++i)
        sum[f].x[i] = __fadd_rn(sum[f].x[i], part_sum[f].x[i]);
    }
  }
  wait_async<0>();
  __syncwarp();  // the result tile overwrites this warp's own operand stages

  float* result = reinterpret_cast<float*>(P::operands(smem, warp, 0));
#pragma unroll
  for (int f = 0; f < kFrags; ++f)
    wmma::store_matrix_sync(result + f * 16, sum[f], P::kResultLd, wmma::mem_row_major);
  __syncwarp();
  // Each output row is written by exactly 8 (row, g) pairs of the grid: fp32 atomics, one
  // coalesced row of slices per warp instruction.
  const int* target = a.target + g * a.target_stride + block_row * 16;
  for (int r = 0; r < 16; ++r) {
    const int t = target[r];
    if (t < 0) continue;
    float* y = a.out + static_cast<std::size_t>(t) * a.slices;
    const float* row = result + r * P::kResultLd;
    for (int s = lane; s < a.slices; s += 32) {
      float value = row[s] * a.column_scale[s];
      if (a.lo_offset > 0) value += row[a.lo_offset + s] * a.column_scale[a.lo_offset + s];
      atomicAdd(y + s, value);
    }
  }
}

// The shape measured fastest at 512^2 on the H100 among 4 x 2, 4 x 3, 2 x 3 and 2 x 4 (blocks x
// stages; bench/tensorcore/results/gathered_pipelines_512_2026-11-23.json): the longer groups
// halve the per-group overhead, two stages keep 2 CTAs per SM.
constexpr int kPipelineBlocks = 4;
constexpr int kPipelineStages = 2;

template <int kFrags, int kBlocks, int kStages>
void launch_with(const GatheredSpmmArgs& a, cudaStream_t stream) {
  constexpr int bytes = Pipeline<kFrags, kBlocks, kStages>::kBytes;
  // Above 48 KB of dynamic shared memory a kernel must opt in, once per process.
  static const bool configured = [] {
    SLICESTREAM_CUDA_CHECK(cudaFuncSetAttribute(gathered_spmm_kernel<kFrags, kBlocks, kStages>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                bytes));
    return true;
  }();
  (void)configured;
  if (a.block_row_count == 0) return;
  gathered_spmm_kernel<kFrags, kBlocks, kStages><<<a.block_row_count, kThreads, bytes, stream>>>(a);
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
  switch (args.columns) {
    case 32:
      return launch_with<2, kPipelineBlocks, kPipelineStages>(args, stream);
    case 64:
      return launch_with<4, kPipelineBlocks, kPipelineStages>(args, stream);
    default:
      throw std::invalid_argument("gathered SpMM: " + std::to_string(args.columns) +
                                  " columns unsupported (32 or 64)");
  }
}

}  // namespace slicestream::tensorcore::cuda
