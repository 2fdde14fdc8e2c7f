#include "kernels/tensorcore/cuda/gathered_spmm.hpp"

#include <cuda_fp16.h>
#include <mma.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/tensorcore/cuda/split_accumulator.cuh"
#include "kernels/tensorcore/mma_accumulation.hpp"

namespace slicestream::tensorcore::cuda {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kUnroll = kMmaChainBlocks;  // blocks staged together = one accumulation chain
constexpr int kTransforms = 8;
constexpr unsigned kFullMask = 0xffffffffu;
static_assert(32 % kUnroll == 0, "chains must not straddle the 32-block index chunks");

// cp.async (sm_80+): 16 bytes global -> shared without registers; src_size 0 fills zeros. .ca
// keeps the line in L1, where the CTA's other warps find the same blocks and operand rows.
__device__ __forceinline__ void copy_async_16(void* shared, const void* global, bool valid) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(global),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commit_async() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void wait_async() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// One stage of a warp: kUnroll blocks (16 x 16 fp16) and their gathered operand tiles
// (16 x C fp16); two stages per warp (double buffering). The result tile (16 x C fp32) reuses the
// first stage's operand tiles.
template <int C>
struct WarpStage {
  static constexpr int kBlockHalves = kUnroll * 256;
  static constexpr int kOperandHalves = kUnroll * 16 * C;
  static constexpr int kHalves = kBlockHalves + kOperandHalves;
  static constexpr int kWarpBytes = 2 * kHalves * 2;
  static_assert(kOperandHalves * 2 >= 16 * C * 4, "the result tile fits the operand tiles");
};

// The block columns of the staged rows lane and lane + 32 of group q (block u = row / 16), or
// -1 past the row's end.
__device__ __forceinline__ void load_group_columns(const int* col_index, int begin, int blocks,
                                                   int q, int lane, int (&col)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int i = q * kUnroll + (lane >> 4) + 2 * h;
    col[h] = i < blocks ? __ldg(col_index + begin + i) : -1;
  }
}

__device__ __forceinline__ void load_group_sources(const int* source, int lane, const int (&col)[2],
                                                   int (&src)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h)
    src[h] = col[h] >= 0 ? __ldg(source + col[h] * 16 + (lane & 15)) : -1;
}

// Starts the copies of group q into `stage`: its blocks, and the operand row of each of its
// 16 x kUnroll k-indices (zeros for missing rows and blocks past the row's end).
template <int C>
__device__ __forceinline__ void stage_group(__half* stage, const __half* blocks, int first_block,
                                            int count, const uint4* in, const int (&src)[2],
                                            int lane) {
  constexpr int kVecPerRow = C / 8;  // 16-byte vectors per operand row
  constexpr int kVecPerLane = kUnroll * 16 * kVecPerRow / 32;
#pragma unroll
  for (int i = 0; i < kUnroll; ++i) {  // kUnroll blocks of 32 vectors, one per lane each
    const int e = lane + 32 * i;
    const int u = e >> 5;
    const int block = first_block + (u < count ? u : 0);  // a valid address even when unused
    copy_async_16(stage + e * 8, blocks + static_cast<std::size_t>(block) * 256 + (e & 31) * 8,
                  u < count);
  }
  __half* operand = stage + WarpStage<C>::kBlockHalves;
#pragma unroll
  for (int t = 0; t < kVecPerLane; ++t) {
    // Vector e is part e % kVecPerRow of staged row e / kVecPerRow, whose source row lane
    // (row & 31) holds in src[row >> 5]; row >> 5 == t / kVecPerRow.
    const int e = lane + 32 * t;
    const int row = e / kVecPerRow;
    const int r = __shfl_sync(kFullMask, src[t / kVecPerRow], row & 31);
    copy_async_16(operand + e * 8,
                  in + static_cast<std::size_t>(r >= 0 ? r : 0) * kVecPerRow + e % kVecPerRow,
                  r >= 0);
  }
}

template <int kFrags>
__global__ void __launch_bounds__(kThreads) gathered_spmm_kernel(GatheredSpmmArgs a) {
  constexpr int C = 16 * kFrags;
  using Stage = WarpStage<C>;
  extern __shared__ __align__(128) unsigned char smem[];
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int rows = a.rows_per_cta;
  const int block_row = static_cast<int>(blockIdx.x) * rows + warp % rows;
  if (block_row >= a.block_row_count) return;
  const int begin = a.row_ptr[block_row];
  const int count = a.row_ptr[block_row + 1] - begin;
  if (count == 0) return;  // adds nothing
  const int groups = (count + kUnroll - 1) / kUnroll;
  __half* stages = reinterpret_cast<__half*>(smem + warp * Stage::kWarpBytes);
  const __half* blocks = reinterpret_cast<const __half*>(a.blocks);
  const uint4* in = reinterpret_cast<const uint4*>(a.in);

  // The warps of one block row take its transforms in turn.
  for (int g = warp / rows; g < kTransforms; g += kWarps / rows) {
    const int* source = a.source + g * a.source_stride;
    SplitAccumulator<wmma::fragment<wmma::accumulator, 16, 16, 16, float>, kFrags> acc;
    acc.clear();
    // Software pipeline: group q is computed while group q + 1 is copied, the operand rows of
    // q + 2 are looked up and the block columns of q + 3 are loaded.
    int col[2], src[2];
    load_group_columns(a.col_index, begin, count, 0, lane, col);
    load_group_sources(source, lane, col, src);
    stage_group<C>(stages, blocks, begin, count, in, src, lane);
    commit_async();
    load_group_columns(a.col_index, begin, count, 1, lane, col);
    load_group_sources(source, lane, col, src);
    load_group_columns(a.col_index, begin, count, 2, lane, col);
    for (int q = 0; q < groups; ++q) {
      if (q + 1 < groups) {
        stage_group<C>(stages + ((q + 1) & 1) * Stage::kHalves, blocks, begin + (q + 1) * kUnroll,
                       count - (q + 1) * kUnroll, in, src, lane);
      }
      commit_async();  // possibly empty: one group per iteration keeps wait_async<1> exact
      load_group_sources(source, lane, col, src);                        // for q + 2
      load_group_columns(a.col_index, begin, count, q + 3, lane, col);  // for q + 3
      wait_async<1>();  // group q has landed
      __syncwarp();
      const __half* stage = stages + (q & 1) * Stage::kHalves;
      const int n = min(kUnroll, count - q * kUnroll);  // warp-uniform
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (u < n) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
          wmma::load_matrix_sync(fa, stage + u * 256, 16);
#pragma unroll
          for (int f = 0; f < kFrags; ++f) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
            wmma::load_matrix_sync(fb, stage + Stage::kBlockHalves + u * 16 * C + f * 16, C);
            wmma::mma_sync(acc.part[f], fa, fb, acc.part[f]);
          }
        }
      }
      if (a.split_accumulation) acc.flush();
      __syncwarp();  // the next iteration's copies overwrite the other stage, then this one
    }
    wait_async<0>();
    __syncwarp();
    acc.flush();  // without splitting: sum = 0 + the whole chain, exactly

    float* result = reinterpret_cast<float*>(stages + Stage::kBlockHalves);
#pragma unroll
    for (int f = 0; f < kFrags; ++f)
      wmma::store_matrix_sync(result + f * 16, acc.sum[f], C, wmma::mem_row_major);
    __syncwarp();
    // Each output row is written by exactly 8 (row, g) pairs of the grid: fp32 atomics, one
    // coalesced row of slices per warp instruction.
    const int* target = a.target + g * a.target_stride + block_row * 16;
    for (int r = 0; r < 16; ++r) {
      const int t = target[r];
      if (t < 0) continue;
      float* y = a.out + static_cast<std::size_t>(t) * a.slices;
      for (int s = lane; s < a.slices; s += 32) {
        float value = result[r * C + s] * a.column_scale[s];
        if (a.lo_offset > 0) {
          value += result[r * C + a.lo_offset + s] * a.column_scale[a.lo_offset + s];
        }
        atomicAdd(y + s, value);
      }
    }
    __syncwarp();  // before the next transform's copies overwrite the result
  }
}

template <int kFrags>
void launch_with(const GatheredSpmmArgs& a, cudaStream_t stream) {
  constexpr int bytes = kWarps * WarpStage<16 * kFrags>::kWarpBytes;
  // Above 48 KB of dynamic shared memory a kernel must opt in, once per process.
  static const bool configured = [] {
    SLICESTREAM_CUDA_CHECK(cudaFuncSetAttribute(
        gathered_spmm_kernel<kFrags>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)configured;
  const int grid = (a.block_row_count + a.rows_per_cta - 1) / a.rows_per_cta;
  if (grid == 0) return;
  gathered_spmm_kernel<kFrags><<<grid, kThreads, bytes, stream>>>(a);
  SLICESTREAM_CUDA_CHECK_LAUNCH("gathered_spmm_kernel");
}

}  // namespace

void launch_gathered_spmm(const GatheredSpmmArgs& args, cudaStream_t stream) {
  const int r = args.rows_per_cta;
  if (r != 1 && r != 2 && r != 4 && r != 8) {
    throw std::invalid_argument("gathered SpMM: rows_per_cta must be 1, 2, 4 or 8, not " +
                                std::to_string(r));
  }
  const int real = args.slices * (args.lo_offset > 0 ? 2 : 1);
  if (args.slices <= 0 || real > args.columns ||
      (args.lo_offset > 0 && args.lo_offset + args.slices > args.columns)) {
    throw std::invalid_argument("gathered SpMM: " + std::to_string(args.slices) +
                                " slices do not fit " + std::to_string(args.columns) +
                                " columns");
  }
  switch (args.columns) {
    case 16:
      return launch_with<1>(args, stream);
    case 32:
      return launch_with<2>(args, stream);
    case 64:
      return launch_with<4>(args, stream);
    default:
      throw std::invalid_argument("gathered SpMM: " + std::to_string(args.columns) +
                                  " columns unsupported (16, 32 or 64)");
  }
}

}  // namespace slicestream::tensorcore::cuda
