// Device evaluation of kernels/expr expressions (the Quickvec idea, elsa thesis §5.4): the whole
// expression is a trivially copyable value passed to one kernel by value, each thread evaluates
// one element, no temporaries. The host twin is kernels/expr/host_evaluate.hpp (assign_rows);
// like it, conditions passed along are counted in the same pass. Fused passes of stores and
// per-column reductions (kernels/expr/pass.hpp) run in one kernel too (evaluate_pass, the twin of
// the host's evaluate_pass).
//
// Include from .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/expr/expression.hpp"
#include "kernels/expr/index.hpp"
#include "kernels/expr/pass.hpp"

namespace slicestream::cuda {
namespace detail {

template <class... C>
__device__ __forceinline__ void count_conditions(unsigned long long* counts,
                                                 const expr::Index2D& index, bool in_range,
                                                 const C&... conditions) {
  int k = 0;
  // One vote per warp and condition; lane 0 adds the warp's count (skipped when zero, the usual
  // case, so clean frames cost no atomics).
  (
      [&] {
        const bool hit = in_range && static_cast<bool>(conditions.at(index));
        const unsigned votes = __ballot_sync(0xffffffffu, hit);
        if ((threadIdx.x & 31u) == 0u && votes != 0u) {
          atomicAdd(counts + k, static_cast<unsigned long long>(__popc(votes)));
        }
        ++k;
      }(),
      ...);
}

// One thread per pixel of a rows x cols image; blockDim.x must be a multiple of 32 so that warps
// never straddle rows.
template <class E, class... C>
// (The pack is not declared const: GCC then cannot convert the kernel to a function pointer,
// which KernelLaunch needs.)
__global__ void assign_2d_kernel(float* out, const E e, expr::Extent2D extent,
                                 unsigned long long* counts, C... conditions) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const bool in_range = col < extent.cols && row < extent.rows;
  const expr::Index2D index{
      static_cast<std::size_t>(in_range ? row : 0) * static_cast<std::size_t>(extent.cols) +
          static_cast<std::size_t>(in_range ? col : 0),
      in_range ? row : 0, in_range ? col : 0};
  if constexpr (sizeof...(C) > 0) count_conditions(counts, index, in_range, conditions...);
  if (in_range) out[index.flat] = e.at(index);
}

constexpr int kPassThreads = 256;

// Maxima of non-negative doubles through their bit patterns (ordered like the values).
__device__ __forceinline__ void atomic_max_nonnegative(double* target, double value) {
  atomicMax(reinterpret_cast<unsigned long long*>(target),
            static_cast<unsigned long long>(__double_as_longlong(value)));
}

// Each thread keeps to one column (blockDim.x and the grid stride are multiples of the column
// count), strides through the rows accumulating in double, and the block folds its partial
// results per column in shared memory before one atomic per block, reduction and column.
template <class P>
__global__ void __launch_bounds__(kPassThreads)
    evaluate_pass_kernel(const P pass, expr::Extent2D extent, double* results) {
  constexpr int kReductions = P::kReductions;
  const unsigned cols = static_cast<unsigned>(extent.cols);
  const std::size_t size = extent.size();
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const int col = static_cast<int>(first % cols);
  const int row_step = static_cast<int>(stride / cols);
  int row = static_cast<int>(first / cols);
  double acc[kReductions + 1] = {};
  for (std::size_t i = first; i < size; i += stride, row += row_step) {
    expr::apply_pass(pass, expr::Index2D{i, row, col}, acc);
  }
  if constexpr (kReductions > 0) {
    __shared__ double partial[kReductions][kPassThreads];
    for (int k = 0; k < kReductions; ++k)
      partial[k][threadIdx.x] = acc[k];
    __syncthreads();
    if (threadIdx.x < cols) {
      for (int k = 0; k < kReductions; ++k) {
        const bool is_max = P::reduction_is_max(k);
        double total = partial[k][threadIdx.x];
        for (unsigned j = threadIdx.x + cols; j < blockDim.x; j += cols) {
          total = is_max ? expr::MaxCombine::combine(total, partial[k][j])
                         : expr::SumCombine::combine(total, partial[k][j]);
        }
        double* target = results + k * cols + threadIdx.x;
        if (is_max) {
          atomic_max_nonnegative(target, total);
        } else {
          atomicAdd(target, total);
        }
      }
    }
  }
}

}  // namespace detail

// The launch of out[r * cols + c] = e.at({flat, r, c}) over a non-empty image; counts[k] += the
// number of pixels where conditions[k] holds (counts: device memory, sizeof...(C) values, may be
// null without conditions). For launch sequences replayed as graphs (launch_sequence.hpp).
template <class E, class... C>
KernelLaunch assign_2d_launch(float* out, const E& e, expr::Extent2D extent,
                              unsigned long long* counts, const C&... conditions) {
  if (extent.rows <= 0 || extent.cols <= 0) throw CudaError("assign_2d over an empty image");
  const dim3 block(64, 4);
  const dim3 grid(static_cast<unsigned>((extent.cols + 63) / 64),
                  static_cast<unsigned>((extent.rows + 3) / 4));
  // The pointer's type pins the instantiation.
  void (*const kernel)(float*, E, expr::Extent2D, unsigned long long*, C...) =
      &detail::assign_2d_kernel<E, C...>;
  return KernelLaunch(kernel, grid, block, out, e, extent, counts, conditions...);
}

// The same, enqueued on `stream` (nothing for an empty image).
template <class E, class... C>
void assign_2d(float* out, const E& e, expr::Extent2D extent, unsigned long long* counts,
               cudaStream_t stream, const C&... conditions) {
  if (extent.rows <= 0 || extent.cols <= 0) return;
  assign_2d_launch(out, e, extent, counts, conditions...).enqueue(stream);
}

// A fused pass (kernels/expr/pass.hpp) over a rows x cols array of 1 to 256 columns, enqueued on
// `stream`: its stores for every element, and results[k * cols + c] = reduction k over column c
// (device memory, P::kReductions * cols doubles, overwritten; may be null without reductions).
// Sums are combined in a different order than on the host: they agree to rounding.
template <class P>
void evaluate_pass(const P& pass, expr::Extent2D extent, double* results, cudaStream_t stream) {
  if (extent.cols <= 0 || extent.cols > detail::kPassThreads) {
    throw std::invalid_argument("evaluate_pass: 1 to 256 columns");
  }
  if constexpr (P::kReductions > 0) {
    SLICESTREAM_CUDA_CHECK(cudaMemsetAsync(
        results, 0, sizeof(double) * P::kReductions * static_cast<std::size_t>(extent.cols),
        stream));
  }
  const std::size_t size = extent.size();
  if (size == 0) return;
  const int threads = detail::kPassThreads / extent.cols * extent.cols;
  // Enough blocks to fill the GPU a few times over; each thread strides through the rest.
  int device = 0;
  SLICESTREAM_CUDA_CHECK(cudaGetDevice(&device));
  int sms = 0;
  SLICESTREAM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t needed = (size + threads - 1) / static_cast<std::size_t>(threads);
  const int blocks =
      static_cast<int>(std::min<std::size_t>(needed, static_cast<std::size_t>(sms) * 8));
  detail::evaluate_pass_kernel<<<blocks, threads, 0, stream>>>(pass, extent, results);
  SLICESTREAM_CUDA_CHECK_LAUNCH("evaluate_pass_kernel");
}

}  // namespace slicestream::cuda
