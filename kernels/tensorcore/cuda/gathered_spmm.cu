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

// Shared memory of one warp: kUnroll gathered 16 x C fp16 operand tiles, reused for the warp's
// 16 x C fp32 result tile (kUnroll >= 2).
template <int C>
constexpr int warp_stage_bytes() {
  return kUnroll * 16 * C * 2;
}

template <int kFrags>
__global__ void __launch_bounds__(kThreads) gathered_spmm_kernel(GatheredSpmmArgs a) {
  constexpr int C = 16 * kFrags;
  constexpr int kVecPerRow = C / 8;  // 16-byte vectors per operand row
  constexpr int kVecPerLane = kUnroll * 16 * kVecPerRow / 32;
  static_assert(kUnroll * 16 == 64, "two staged rows per lane");
  extern __shared__ __align__(128) unsigned char smem[];
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int rows = a.rows_per_cta;
  const int block_row = static_cast<int>(blockIdx.x) * rows + warp % rows;
  if (block_row >= a.block_row_count) return;
  const int begin = a.row_ptr[block_row];
  const int end = a.row_ptr[block_row + 1];
  if (begin == end) return;  // adds nothing
  __half* stage = reinterpret_cast<__half*>(smem + warp * warp_stage_bytes<C>());
  const __half* blocks = reinterpret_cast<const __half*>(a.blocks);
  const uint4* in = reinterpret_cast<const uint4*>(a.in);

  // The warps of one block row take its transforms in turn.
  for (int g = warp / rows; g < kTransforms; g += kWarps / rows) {
    const int* source = a.source + g * a.source_stride;
    SplitAccumulator<wmma::fragment<wmma::accumulator, 16, 16, 16, float>, kFrags> acc;
    acc.clear();
    for (int chunk = begin; chunk < end; chunk += 32) {
      const int count = min(32, end - chunk);
      const int lane_col = lane < count ? a.col_index[chunk + lane] : 0;
      for (int j = 0; j < count; j += kUnroll) {
        const int n = min(kUnroll, count - j);  // warp-uniform
        // Operand rows of the staged rows lane and lane + 32 (block u = row / 16, k = row % 16).
        int src[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = lane + 32 * h;
          const int u = row >> 4;
          const int col_block = __shfl_sync(kFullMask, lane_col, j + min(u, n - 1));
          src[h] = u < n ? source[col_block * 16 + (row & 15)] : -1;
        }
        // Gather: vector e of the stage is part e % kVecPerRow of staged row e / kVecPerRow; its
        // row is held by lane (row & 31) in src[row >> 5], and row >> 5 == t / kVecPerRow.
        uint4 v[kVecPerLane];
#pragma unroll
        for (int t = 0; t < kVecPerLane; ++t) {
          const int e = lane + 32 * t;
          const int row = e / kVecPerRow;
          const int r = __shfl_sync(kFullMask, src[t / kVecPerRow], row & 31);
          v[t] = r >= 0 ? __ldg(in + static_cast<std::size_t>(r) * kVecPerRow + e % kVecPerRow)
                        : make_uint4(0, 0, 0, 0);
        }
        uint4* staged = reinterpret_cast<uint4*>(stage);
#pragma unroll
        for (int t = 0; t < kVecPerLane; ++t)
          staged[lane + 32 * t] = v[t];
        __syncwarp();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (u < n) {
            wmma::load_matrix_sync(fa[u], blocks + static_cast<std::size_t>(chunk + j + u) * 256,
                                   16);
          }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (u < n) {
#pragma unroll
            for (int f = 0; f < kFrags; ++f) {
              wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
              wmma::load_matrix_sync(fb, stage + u * 16 * C + f * 16, C);
              wmma::mma_sync(acc.part[f], fa[u], fb, acc.part[f]);
            }
          }
        }
        if (a.split_accumulation) acc.flush();
        __syncwarp();  // before the next gather overwrites the stage
      }
    }
    acc.flush();  // without splitting: sum = 0 + the whole chain, exactly

    float* result = reinterpret_cast<float*>(stage);
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
    __syncwarp();  // before the next transform's gather overwrites the result
  }
}

template <int kFrags>
void launch_with(const GatheredSpmmArgs& a, cudaStream_t stream) {
  constexpr int bytes = kWarps * warp_stage_bytes<16 * kFrags>();
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
