#include "kernels/tensorcore/cuda/bsr_spmm.hpp"

#include <cuda_fp16.h>
#include <mma.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/tensorcore/cuda/split_accumulator.cuh"

namespace slicestream::tensorcore::cuda {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = kWarpsPerBlock * 32;
constexpr unsigned kFullMask = 0xffffffffu;
static_assert(32 % kMmaChainBlocks == 0, "chains must not straddle the 32-block index chunks");

// One warp per (block row, tile of CW columns); the CTA's 8 warps take neighbouring block rows
// (or the column tiles of one row when columns > 32), so the X tiles they share come from L1.
// Block column indices are fetched 32 at a time (one per lane) and broadcast with shuffles; UNROLL
// blocks' fragments are loaded before their products to keep several loads in flight. With
// split_accumulation each group of UNROLL blocks (the rest of a row: one group) accumulates in a
// fresh fragment that is then added to the fp32 sum: the tensor cores truncate inside each MMA,
// so one chain over a whole row would lose low bits of every product, always toward zero.
template <int M, int NF, int CW, int UNROLL>
__global__ void __launch_bounds__(kThreads) bsr_forward_kernel(BsrForwardArgs args) {
  constexpr int kFrags = CW / NF;
  __shared__ __align__(32) float stage[kWarpsPerBlock][M * CW];
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warps_per_row = args.columns / CW;
  const int rows_per_cta = kWarpsPerBlock / warps_per_row;
  const int block_row = static_cast<int>(blockIdx.x) * rows_per_cta + warp / warps_per_row;
  if (block_row >= args.block_row_count) return;
  const int col0 = (warp % warps_per_row) * CW;
  const std::size_t group_stride = static_cast<std::size_t>(args.x_rows) * NF;
  const __half* blocks = reinterpret_cast<const __half*>(args.blocks);
  const __half* x_base =
      reinterpret_cast<const __half*>(args.x) + static_cast<std::size_t>(col0 / NF) * group_stride;

  SplitAccumulator<wmma::fragment<wmma::accumulator, M, NF, 16, float>, kFrags> acc;
  acc.clear();

  const int begin = args.row_ptr[block_row];
  const int end = args.row_ptr[block_row + 1];
  for (int chunk = begin; chunk < end; chunk += 32) {
    const int count = min(32, end - chunk);
    const int lane_col = lane < count ? args.col_index[chunk + lane] : 0;
    int j = 0;
    for (; j + UNROLL <= count; j += UNROLL) {
      wmma::fragment<wmma::matrix_a, M, NF, 16, __half, wmma::row_major> a[UNROLL];
      wmma::fragment<wmma::matrix_b, M, NF, 16, __half, wmma::row_major> b[UNROLL][kFrags];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int c = __shfl_sync(kFullMask, lane_col, j + u);
        wmma::load_matrix_sync(a[u], blocks + static_cast<std::size_t>(chunk + j + u) * (M * 16),
                               16);
        const __half* xb = x_base + static_cast<std::size_t>(c) * 16 * NF;
#pragma unroll
        for (int f = 0; f < kFrags; ++f)
          wmma::load_matrix_sync(b[u][f], xb + f * group_stride, NF);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
        for (int f = 0; f < kFrags; ++f)
          wmma::mma_sync(acc.part[f], a[u], b[u][f], acc.part[f]);
      }
      if (args.split_accumulation) acc.flush();
    }
    for (; j < count; ++j) {
      const int c = __shfl_sync(kFullMask, lane_col, j);
      wmma::fragment<wmma::matrix_a, M, NF, 16, __half, wmma::row_major> a;
      wmma::load_matrix_sync(a, blocks + static_cast<std::size_t>(chunk + j) * (M * 16), 16);
      const __half* xb = x_base + static_cast<std::size_t>(c) * 16 * NF;
#pragma unroll
      for (int f = 0; f < kFrags; ++f) {
        wmma::fragment<wmma::matrix_b, M, NF, 16, __half, wmma::row_major> b;
        wmma::load_matrix_sync(b, xb + f * group_stride, NF);
        wmma::mma_sync(acc.part[f], a, b, acc.part[f]);
      }
    }
    if (args.split_accumulation) acc.flush();  // the last (short) group of the row
  }
  acc.flush();  // without splitting: sum = 0 + the whole chain, exactly

  float* s = stage[warp];
#pragma unroll
  for (int f = 0; f < kFrags; ++f)
    wmma::store_matrix_sync(s + f * NF, acc.sum[f], CW, wmma::mem_row_major);
  __syncwarp();
  float* y = args.y + static_cast<std::size_t>(block_row) * M * args.columns + col0;
  for (int i = lane; i < M * CW; i += 32) {
    const int r = i / CW;
    const int c = i % CW;
    y[static_cast<std::size_t>(r) * args.columns + c] = s[i] * args.column_scale[col0 + c];
  }
}

// One warp per (block column of 16 pixels, tile of CW columns). A block of M rays, read as a
// column-major 16 x M A fragment, is its own transpose. M = 32 takes two k-steps; M = 8 is staged
// through shared memory into a 16 x 16 tile whose rays 8..15 are zero (fp16 WMMA has k = 16), and
// the Y rows it then also reads (the next block row's 8 rays) are multiplied by those zeros.
template <int M, int CW, int UNROLL>
__global__ void __launch_bounds__(kThreads) bsr_transposed_kernel(BsrTransposedArgs args) {
  constexpr int kFrags = CW / 16;
  constexpr int kSteps = M == 32 ? 2 : 1;
  __shared__ __align__(32) float stage[kWarpsPerBlock][16 * CW];
  __shared__ __align__(32) std::uint16_t a_stage[kWarpsPerBlock][M == 8 ? UNROLL : 1][16 * 16];
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warps_per_col = args.columns16 / CW;
  const int cols_per_cta = kWarpsPerBlock / warps_per_col;
  const int block_col = static_cast<int>(blockIdx.x) * cols_per_cta + warp / warps_per_col;
  if (block_col >= args.block_col_count) return;
  const int col0 = (warp % warps_per_col) * CW;
  const std::size_t group_stride = static_cast<std::size_t>(args.y_rows) * 16;
  const __half* blocks = reinterpret_cast<const __half*>(args.blocks);
  const __half* y_base =
      reinterpret_cast<const __half*>(args.y) + static_cast<std::size_t>(col0 / 16) * group_stride;

  if constexpr (M == 8) {
    // Rays 8..15 of every staged tile stay zero.
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      for (int i = lane; i < 128; i += 32)
        a_stage[warp][u][128 + i] = 0;  // +0.0 in fp16
    }
    __syncwarp();
  }

  SplitAccumulator<wmma::fragment<wmma::accumulator, 16, 16, 16, float>, kFrags> acc;
  acc.clear();

  const int begin = args.col_ptr[block_col];
  const int end = args.col_ptr[block_col + 1];
  for (int chunk = begin; chunk < end; chunk += 32) {
    const int count = min(32, end - chunk);
    const int lane_block = lane < count ? args.col_blocks[chunk + lane] : 0;
    const int lane_row = lane < count ? args.col_block_rows[chunk + lane] : 0;
    for (int j = 0; j < count; j += UNROLL) {
      const int n = min(UNROLL, count - j);  // warp-uniform
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::col_major> a[UNROLL][kSteps];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[UNROLL][kSteps][kFrags];
      if constexpr (M == 8) {
        // Stage n blocks of 256 bytes: 16 lanes per block, 16 bytes each.
#pragma unroll
        for (int u = 0; u < UNROLL; u += 2) {
          const int which = u + lane / 16;
          const int block = __shfl_sync(kFullMask, lane_block, j + min(which, n - 1));
          if (which < n) {
            const uint4* src =
                reinterpret_cast<const uint4*>(blocks + static_cast<std::size_t>(block) * 128);
            reinterpret_cast<uint4*>(a_stage[warp][which])[lane % 16] = src[lane % 16];
          }
        }
        __syncwarp();
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (u < n) {
          const int block = __shfl_sync(kFullMask, lane_block, j + u);
          const int block_row = __shfl_sync(kFullMask, lane_row, j + u);
#pragma unroll
          for (int k = 0; k < kSteps; ++k) {
            if constexpr (M == 8) {
              wmma::load_matrix_sync(a[u][k], reinterpret_cast<const __half*>(a_stage[warp][u]),
                                     16);
            } else {
              wmma::load_matrix_sync(
                  a[u][k], blocks + static_cast<std::size_t>(block) * (M * 16) + k * 256, 16);
            }
            const __half* yb = y_base + (static_cast<std::size_t>(block_row) * M + k * 16) * 16;
#pragma unroll
            for (int f = 0; f < kFrags; ++f)
              wmma::load_matrix_sync(b[u][k][f], yb + f * group_stride, 16);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (u < n) {
#pragma unroll
          for (int k = 0; k < kSteps; ++k) {
#pragma unroll
            for (int f = 0; f < kFrags; ++f)
              wmma::mma_sync(acc.part[f], a[u][k], b[u][k][f], acc.part[f]);
          }
        }
      }
      if (args.split_accumulation) acc.flush();
      if constexpr (M == 8) __syncwarp();  // before the next staging overwrites a_stage
    }
  }
  acc.flush();  // without splitting: sum = 0 + the whole chain, exactly

  float* s = stage[warp];
#pragma unroll
  for (int f = 0; f < kFrags; ++f)
    wmma::store_matrix_sync(s + f * 16, acc.sum[f], CW, wmma::mem_row_major);
  __syncwarp();
  float* x = args.x + static_cast<std::size_t>(block_col) * 16 * args.x_columns;
  for (int i = lane; i < 16 * CW; i += 32) {
    const int r = i / CW;
    const int c = col0 + i % CW;
    if (c < args.x_columns)
      x[static_cast<std::size_t>(r) * args.x_columns + c] = s[i] * args.column_scale[c];
  }
}

template <int M, int NF, int CW>
void forward_with(const BsrForwardArgs& args, cudaStream_t stream) {
  const int rows_per_cta = kWarpsPerBlock / (args.columns / CW);
  const int grid = (args.block_row_count + rows_per_cta - 1) / rows_per_cta;
  if (grid == 0) return;
  bsr_forward_kernel<M, NF, CW, kMmaChainBlocks><<<grid, kThreads, 0, stream>>>(args);
  SLICESTREAM_CUDA_CHECK_LAUNCH("bsr_forward_kernel");
}

template <int M, int CW>
void transposed_with(const BsrTransposedArgs& args, cudaStream_t stream) {
  const int cols_per_cta = kWarpsPerBlock / (args.columns16 / CW);
  const int grid = (args.block_col_count + cols_per_cta - 1) / cols_per_cta;
  if (grid == 0) return;
  bsr_transposed_kernel<M, CW, kMmaChainBlocks><<<grid, kThreads, 0, stream>>>(args);
  SLICESTREAM_CUDA_CHECK_LAUNCH("bsr_transposed_kernel");
}

}  // namespace

int forward_warp_columns(WmmaShape shape, int columns) {
  const int n = dims(shape).n;
  const int tile = columns >= 32 ? 32 : columns;
  if (columns <= 0 || columns > 256 || tile < n || tile % n != 0 || columns % tile != 0) return 0;
  if (kWarpsPerBlock % (columns / tile) != 0) return 0;
  return tile;
}

void launch_bsr_forward(WmmaShape shape, const BsrForwardArgs& args, cudaStream_t stream) {
  const int tile = forward_warp_columns(shape, args.columns);
  if (tile == 0) {
    throw std::invalid_argument(std::string("WMMA ") + to_string(shape) +
                                " forward: " + std::to_string(args.columns) +
                                " columns unsupported (multiples of the fragment width n, of 32 "
                                "above 32, at most 256)");
  }
  switch (shape) {
    case WmmaShape::kM32N8K16:
      if (tile == 8) return forward_with<32, 8, 8>(args, stream);
      if (tile == 16) return forward_with<32, 8, 16>(args, stream);
      return forward_with<32, 8, 32>(args, stream);
    case WmmaShape::kM16N16K16:
      if (tile == 16) return forward_with<16, 16, 16>(args, stream);
      return forward_with<16, 16, 32>(args, stream);
    case WmmaShape::kM8N32K16:
      return forward_with<8, 32, 32>(args, stream);
  }
}

void launch_bsr_transposed(WmmaShape shape, const BsrTransposedArgs& args, cudaStream_t stream) {
  const int c = args.columns16;
  const int tile = c >= 32 ? 32 : 16;
  if (c <= 0 || c > 256 || c % tile != 0 || kWarpsPerBlock % (c / tile) != 0 ||
      args.x_columns > c) {
    throw std::invalid_argument("WMMA transposed: " + std::to_string(c) +
                                " columns unsupported (16, or multiples of 32 up to 256)");
  }
  switch (dims(shape).m) {
    case 32:
      if (tile == 16) return transposed_with<32, 16>(args, stream);
      return transposed_with<32, 32>(args, stream);
    case 16:
      if (tile == 16) return transposed_with<16, 16>(args, stream);
      return transposed_with<16, 32>(args, stream);
    default:
      if (tile == 16) return transposed_with<8, 16>(args, stream);
      return transposed_with<8, 32>(args, stream);
  }
}

}  // namespace slicestream::tensorcore::cuda
