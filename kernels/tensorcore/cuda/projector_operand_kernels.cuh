// The element-wise kernels around the WMMA products of TensorCoreProjector: fp16 operand
// scales, operands from images and sinograms (renumbered, symmetry-gathered, compensated), and
// the results back (renumbered, inverse transforms summed, layouts summed). Included by
// tensorcore_projector.cu only (hence the unnamed namespace: one translation unit).
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/tensorcore/operand_scaling.hpp"

namespace slicestream::tensorcore::cuda {

namespace {

constexpr int kThreads = 256;

int blocks_for(std::size_t n) {
  return static_cast<int>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 1u << 30));
}

int round_up(int v, int m) {
  return (v + m - 1) / m * m;
}

// Column c of a product with `real` value columns, compensated (lo_offset = real) or not (0):
// the value column it carries, or -1 for padding.
__host__ __device__ inline int value_column(int c, int real, int lo_offset) {
  if (c < real) return c;
  if (lo_offset > 0 && c < 2 * real) return c - real;
  return -1;
}

// Per product column c (slice value_column / per_slice): the fp16 operand scale and the output
// factor (lo columns: 2^-12 more). Padding columns get operand scale 0 (zero operands), factor 0.
__global__ void compute_scales_kernel(const float* max_f, const double* max_d, int slices,
                                      int per_slice, int columns, int lo_offset, float value_scale,
                                      float* operand_scale, float* column_scale) {
  const int real = slices * per_slice;
  for (int c = static_cast<int>(threadIdx.x); c < columns; c += static_cast<int>(blockDim.x)) {
    const int v = value_column(c, real, lo_offset);
    if (v >= 0) {
      const int s = v / per_slice;
      const float m = max_f != nullptr ? max_f[s] : static_cast<float>(max_d[s]);
      const float scale = half_operand_scale(m);
      operand_scale[c] = scale;
      column_scale[c] = value_scale / (c == v ? scale : scale * kLowOperandFactor);
    } else {
      operand_scale[c] = 0.0f;
      column_scale[c] = 0.0f;
    }
  }
}

// X (fp16, [columns / nf][x_rows][nf]) from the image (pixels x slices). Plain: column c is slice
// c. Symmetric: column c = 8 s + t holds slice s under symmetry t gathered onto the octant.
// The fp16 operand of value v in product column c (lo columns carry the rounding remainder).
__device__ inline __half operand_of(float v, int c, int real, float scale) {
  const float scaled = v * scale;
  const __half hi = __float2half_rn(scaled);
  if (c < real) return hi;
  return __float2half_rn((scaled - __half2float(hi)) * kLowOperandFactor);
}

__global__ void forward_operand_kernel(const float* __restrict__ image, int slices, bool symmetric,
                                       long long pixels, const int* __restrict__ col_source,
                                       const int* __restrict__ octant_image, long long x_rows,
                                       int nf, int columns, int real, int lo_offset,
                                       const float* __restrict__ operand_scale,
                                       __half* __restrict__ x) {
  const std::size_t total = static_cast<std::size_t>(columns) * static_cast<std::size_t>(x_rows);
  const std::size_t group_size = static_cast<std::size_t>(x_rows) * nf;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int g = static_cast<int>(i / group_size);
    const std::size_t rest = i % group_size;
    const long long slot = static_cast<long long>(rest / nf);
    const int c = g * nf + static_cast<int>(rest % nf);
    const int vc = value_column(c, real, lo_offset);
    const int source = col_source[slot];
    float v = 0.0f;
    if (vc >= 0 && source >= 0) {
      if (symmetric) {
        const int pixel = octant_image[static_cast<long long>(vc & 7) * pixels + source];
        if (pixel >= 0) v = image[static_cast<std::size_t>(pixel) * slices + (vc >> 3)];
      } else {
        v = image[static_cast<std::size_t>(source) * slices + vc];
      }
    }
    x[i] = operand_of(v, c, real, operand_scale[c]);
  }
}

// Sinogram (rays x slices) from the SpMM output (mapped rows x columns). Symmetric: the sum over t
// of column 8 s + t at the row of ray t^-1(r) (ray_slot holds those rows, [8][rays]).
__global__ void forward_output_kernel(const float* __restrict__ y, int columns, int lo_offset,
                                      bool symmetric, long long rays, int slices,
                                      const int* __restrict__ ray_slot,
                                      float* __restrict__ sinogram) {
  const std::size_t total = static_cast<std::size_t>(rays) * slices;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const long long r = static_cast<long long>(i / slices);
    const int s = static_cast<int>(i % slices);
    if (symmetric) {
      float sum = 0.0f;
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        const float* row = y + static_cast<std::size_t>(ray_slot[t * rays + r]) * columns;
        sum += row[s * 8 + t] + (lo_offset > 0 ? row[lo_offset + s * 8 + t] : 0.0f);
      }
      sinogram[i] = sum;
    } else {
      const float* row = y + static_cast<std::size_t>(ray_slot[r]) * columns;
      sinogram[i] = row[s] + (lo_offset > 0 ? row[lo_offset + s] : 0.0f);
    }
  }
}

// Y (fp16, [columns16 / 16][y_rows][16]) from the sinogram. Symmetric: column 8 s + t holds
// slice s at ray t(r).
__global__ void backward_operand_kernel(const float* __restrict__ sinogram, int slices,
                                        bool symmetric, long long rays, long long rows,
                                        const int* __restrict__ row_source,
                                        const int* __restrict__ ray_image, long long y_rows,
                                        int columns16, int real, int lo_offset,
                                        const float* __restrict__ operand_scale,
                                        __half* __restrict__ y) {
  const std::size_t total = static_cast<std::size_t>(columns16) * static_cast<std::size_t>(y_rows);
  const std::size_t group_size = static_cast<std::size_t>(y_rows) * 16;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int g = static_cast<int>(i / group_size);
    const std::size_t rest = i % group_size;
    const long long slot = static_cast<long long>(rest / 16);
    const int c = g * 16 + static_cast<int>(rest % 16);
    const int ray = slot < rows ? row_source[slot] : -1;
    const int vc = value_column(c, real, lo_offset);
    float v = 0.0f;
    if (ray >= 0 && vc >= 0) {
      if (symmetric) {
        v = sinogram[static_cast<std::size_t>(ray_image[(vc & 7) * rays + ray]) * slices +
                     (vc >> 3)];
      } else {
        v = sinogram[static_cast<std::size_t>(ray) * slices + vc];
      }
    }
    y[i] = operand_of(v, c, real, operand_scale[c]);
  }
}

// Image (pixels x slices) from the transposed SpMM output: the sum over the column layouts, and
// for the symmetry over the transforms t that map the pixel's octant representative onto it.
__global__ void backward_output_kernel(const float* __restrict__ x, int x_columns, int lo_offset,
                                       bool symmetric, long long pixels, int slices, int layouts,
                                       const int* __restrict__ pixel_slots,
                                       const unsigned char* __restrict__ transform_mask,
                                       float* __restrict__ image) {
  const std::size_t total = static_cast<std::size_t>(pixels) * slices;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const long long p = static_cast<long long>(i / slices);
    const int s = static_cast<int>(i % slices);
    float sum = 0.0f;
    for (int l = 0; l < layouts; ++l) {
      const float* row = x + static_cast<std::size_t>(pixel_slots[l * pixels + p]) * x_columns;
      if (symmetric) {
        const unsigned mask = transform_mask[p];
        for (int t = 0; t < 8; ++t) {
          if (mask & (1u << t))
            sum += row[s * 8 + t] + (lo_offset > 0 ? row[lo_offset + s * 8 + t] : 0.0f);
        }
      } else {
        sum += row[s] + (lo_offset > 0 ? row[lo_offset + s] : 0.0f);
      }
    }
    image[i] = sum;
  }
}

// Operand rows for the gathered products: out (fp16, [rows][columns]) from values (rows x slices):
// column c carries slice value_column(c) (hi, then lo when compensated), padding columns zero.
// Thread (x, y) of a block converts column x of rows y, y + blockDim.y, ...: blockDim.x must be
// `columns`. (A flat index would cost a 64-bit division per value, which made this pass slower
// than its memory traffic.)
__global__ void rows_operand_kernel(const float* __restrict__ values, long long rows, int slices,
                                    int columns, int lo_offset,
                                    const float* __restrict__ operand_scale,
                                    __half* __restrict__ out) {
  const int c = static_cast<int>(threadIdx.x);
  const int vc = value_column(c, slices, lo_offset);
  const float scale = operand_scale[c];
  for (long long row = static_cast<long long>(blockIdx.x) * blockDim.y + threadIdx.y; row < rows;
       row += static_cast<long long>(gridDim.x) * blockDim.y) {
    const float v = vc >= 0 ? values[row * slices + vc] : 0.0f;
    out[row * columns + c] = operand_of(v, c, slices, scale);
  }
}

}  // namespace

}  // namespace slicestream::tensorcore::cuda
