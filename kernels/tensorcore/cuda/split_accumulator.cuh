// The split accumulation of the WMMA kernels (kernels/tensorcore/mma_accumulation.hpp): the tensor
// cores truncate inside every MMA, so one accumulation chain over hundreds of blocks loses low
// bits of every product, always toward zero. Each group of blocks accumulates in `part`, which
// flush() adds to the fp32 `sum` with round-to-nearest adds.
#pragma once

#include <mma.h>

namespace slicestream::tensorcore::cuda {

// kFrags fp32 results (sum) and the MMA chains of the current group of blocks (part); both
// fragments have the same layout, so flush() adds them element by element.
template <class Fragment, int kFrags>
struct SplitAccumulator {
  Fragment sum[kFrags];
  Fragment part[kFrags];

  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int f = 0; f < kFrags; ++f) {
      nvcuda::wmma::fill_fragment(sum[f], 0.0f);
      nvcuda::wmma::fill_fragment(part[f], 0.0f);
    }
  }
  __device__ __forceinline__ void flush() {
#pragma unroll
    for (int f = 0; f < kFrags; ++f) {
#pragma unroll
      for (int i = 0; i < part[f].num_elements; ++i)
        sum[f].x[i] = __fadd_rn(sum[f].x[i], part[f].x[i]);
      nvcuda::wmma::fill_fragment(part[f], 0.0f);
    }
  }
};

}  // namespace slicestream::tensorcore::cuda
