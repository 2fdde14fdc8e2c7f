// Marks functions that compile for both the CPU backend and CUDA kernels.
#pragma once

#if defined(__CUDACC__)
#define SLICESTREAM_HD __host__ __device__
#define SLICESTREAM_INLINE __host__ __device__ __forceinline__
#else
#define SLICESTREAM_HD
#define SLICESTREAM_INLINE inline
#endif
