// Device evaluation of kernels/expr expressions (the Quickvec idea, elsa thesis §5.4): the whole
// expression is a trivially copyable value passed to one kernel by value, each thread evaluates
// one element, no temporaries. The host twin is kernels/expr/host_evaluate.hpp (assign_rows);
// like it, conditions passed along are counted in the same pass.
//
// Include from .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/expr/expression.hpp"
#include "kernels/expr/index.hpp"

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

}  // namespace slicestream::cuda
