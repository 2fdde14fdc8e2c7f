// The CUDA twin of fused::evaluate_host: one kernel evaluates a pass's assignments per element
// and reduces its reductions per column in the same sweep (elsa thesis §6.2: evaluate and reduce
// in one kernel; no temporary, one traversal). Each thread keeps to one column (block size and
// grid stride are multiples of `columns`), accumulates in double, folds its block in shared
// memory and adds one value per column and reduction to `results`.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>

#include "kernels/tensorcore/cuda/cuda_check.hpp"
#include "kernels/tensorcore/fused_expression.hpp"

namespace slicestream::tensorcore::cuda {

namespace fused_detail {

constexpr int kMaxThreads = 256;

// Maxima of non-negative doubles through their bit patterns (ordered like the values).
__device__ inline void atomic_max_nonnegative(double* target, double value) {
  atomicMax(reinterpret_cast<unsigned long long*>(target),
            static_cast<unsigned long long>(__double_as_longlong(value)));
}

template <class P>
__global__ void __launch_bounds__(kMaxThreads)
    fused_pass_kernel(P pass, std::size_t size, int columns, double* results) {
  constexpr int kReductions = P::kReductions;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const int column = static_cast<int>(first % static_cast<std::size_t>(columns));
  double acc[2] = {0.0, 0.0};
  for (std::size_t i = first; i < size; i += stride) {
    fused::assign_at(pass, i, column);
    fused::reduce_at(pass, i, column, acc);
  }
  if constexpr (kReductions > 0) {
    __shared__ double partial[kReductions][kMaxThreads];
    for (int k = 0; k < kReductions; ++k)
      partial[k][threadIdx.x] = acc[k];
    __syncthreads();
    if (threadIdx.x < static_cast<unsigned>(columns)) {
      for (int k = 0; k < kReductions; ++k) {
        const fused::ReduceKind kind = fused::reduction_kind(pass, k);
        double total = partial[k][threadIdx.x];
        for (unsigned j = threadIdx.x + columns; j < blockDim.x; j += columns) {
          total = fused::fold(kind, total, partial[k][j]);
        }
        double* target = results + k * columns + threadIdx.x;
        if (kind == fused::ReduceKind::kSumOfSquares) {
          atomicAdd(target, total);
        } else {
          atomic_max_nonnegative(target, total);
        }
      }
    }
  }
}

}  // namespace fused_detail

// Runs `pass` over `size` elements of `columns` interleaved columns on `stream`; results (device,
// P::kReductions * columns doubles, may be null without reductions) are overwritten.
template <class P>
void evaluate_device(const P& pass, std::size_t size, int columns, double* results,
                     cudaStream_t stream) {
  if (columns <= 0 || columns > fused_detail::kMaxThreads) {
    throw std::invalid_argument("fused pass: 1 to 256 columns");
  }
  if constexpr (P::kReductions > 0) {
    check(cudaMemsetAsync(results, 0, sizeof(double) * P::kReductions * columns, stream),
          "fused pass: clear results");
  }
  if (size == 0) return;
  const int threads = fused_detail::kMaxThreads / columns * columns;
  // Enough blocks to fill the GPU a few times over; each thread strides through the rest.
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
  const std::size_t needed = (size + threads - 1) / static_cast<std::size_t>(threads);
  const int blocks =
      static_cast<int>(std::min<std::size_t>(needed, static_cast<std::size_t>(sms) * 8));
  fused_detail::fused_pass_kernel<<<blocks, threads, 0, stream>>>(pass, size, columns, results);
  check_launch("fused_pass_kernel");
}

}  // namespace slicestream::tensorcore::cuda
