// The kernels of the projection store's updates (projection_texture_store.cu, their only
// includer, hence the unnamed namespace): the per-projection replacement of a batch of slots, in
// texture layers (fp32 or fp16 texels) or linear memory, zeroing layers and reading one back as
// fp32.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda/projection_texture_store.hpp"
#include "kernels/half_range.hpp"

namespace slicestream::cuda {
namespace {

constexpr int kScratchUnchanged = 0;
constexpr int kScratchDifference = 1;
constexpr int kScratchOld = 2;

// Projections per replacement launch (the batch travels in the kernel's parameters).
constexpr int kMaxReplaceBatch = 16;

// One slot as the store keeps it: a layer of a layered array (through its surface) or rows x cols
// floats in linear memory.
struct SlotAccess {
  cudaSurfaceObject_t surface;
  float* linear;  // null: the layer of `surface`
  int layer;
};

struct ReplaceEntry {
  const float* projection;
  int row_pitch;  // floats between the projection's rows (>= cols)
  SlotAccess slot;
  SlotAccess scratch;
  int scratch_mode;
};

struct ReplaceBatch {
  ReplaceEntry entries[kMaxReplaceBatch];
  int rows;
  int cols;
  int half_texels;  // the slots' and the scratch layers' texels are fp16
  // With fp16 texels: the store's count of clamped values (page-locked host memory).
  unsigned long long* out_of_range;
};

// Columns one thread of replace_slots_quad_kernel takes: 16-byte loads of the new values and of
// fp32 rows, 8-byte surface accesses of fp16 texels, so that the pass moves its bytes in as few
// requests as the memory system allows (one 2-byte surface access per texel leaves it well short
// of the DRAM rate). fp32 texels keep one texel per thread: their 16-byte surface accesses were
// no faster, and slower for small batches (docs/performance.md).
constexpr int kQuad = 4;

// `value` as an fp16 texel holds it (rounded to nearest), as fp32. Values beyond fp16's finite
// range are clamped to it (NaN to zero) and counted: an infinity in a slot would turn every
// difference new - old it takes part in, and with it every slice, into NaN.
__device__ __forceinline__ float as_half_texel(float value, unsigned long long* out_of_range) {
  if (!(fabsf(value) <= kHalfMax)) {
    atomicAdd(out_of_range, 1ULL);
    value = isnan(value) ? 0.0f : copysignf(kHalfMax, value);
  }
  return __half2float(__float2half_rn(value));
}

// What one pixel's replacement leaves: the slot's new texel and the scratch value.
struct ReplacedPixel {
  float texel;
  float scratch;
};

// The arithmetic of one pixel, shared by both kernels. With fp16 texels the new value is rounded
// (or clamped) first and the difference is taken from the values as stored, so that the live
// slices and a recompute from the store agree; it is exact in fp32 and rounded (clamped) once
// more into an fp16 scratch texel.
__device__ __forceinline__ ReplacedPixel replace_pixel(float fresh, float old_value, int mode,
                                                       const ReplaceBatch& batch) {
  const bool half = batch.half_texels != 0;
  ReplacedPixel out{half ? as_half_texel(fresh, batch.out_of_range) : fresh, old_value};
  if (mode == kScratchDifference) {
    out.scratch = out.texel - old_value;
    if (half) out.scratch = as_half_texel(out.scratch, batch.out_of_range);
  }
  return out;
}

__device__ __forceinline__ float load_texel(const SlotAccess& a, int half_texels, int row, int col,
                                            std::size_t index) {
  if (a.linear != nullptr) return a.linear[index];
  if (half_texels != 0) {
    unsigned short bits = 0;
    surf2DLayeredread(&bits, a.surface, col * static_cast<int>(sizeof(bits)), row, a.layer);
    return __half2float(__ushort_as_half(bits));
  }
  float value = 0.0f;
  surf2DLayeredread(&value, a.surface, col * static_cast<int>(sizeof(value)), row, a.layer);
  return value;
}

__device__ __forceinline__ void store_texel(const SlotAccess& a, int half_texels, int row, int col,
                                            std::size_t index, float value) {
  if (a.linear != nullptr) {
    a.linear[index] = value;
  } else if (half_texels != 0) {
    const unsigned short bits = __half_as_ushort(__float2half_rn(value));
    surf2DLayeredwrite(bits, a.surface, col * static_cast<int>(sizeof(bits)), row, a.layer);
  } else {
    surf2DLayeredwrite(value, a.surface, col * static_cast<int>(sizeof(value)), row, a.layer);
  }
}

// kQuad values from column `col` on (a multiple of kQuad) in one access: fp32 rows, or fp16
// texels through the surface (a surface access reads or writes as many bytes as its operand
// holds, from the byte offset it is given).
__device__ __forceinline__ float4 load_quad(const SlotAccess& a, int row, int col,
                                            std::size_t index) {
  if (a.linear != nullptr) return *reinterpret_cast<const float4*>(a.linear + index);
  uint2 bits{};
  surf2DLayeredread(&bits, a.surface, col * static_cast<int>(sizeof(__half)), row, a.layer);
  const float2 low = __half22float2(*reinterpret_cast<const __half2*>(&bits.x));
  const float2 high = __half22float2(*reinterpret_cast<const __half2*>(&bits.y));
  return float4{low.x, low.y, high.x, high.y};
}

__device__ __forceinline__ void store_quad(const SlotAccess& a, int row, int col, std::size_t index,
                                           float4 value) {
  if (a.linear != nullptr) {
    *reinterpret_cast<float4*>(a.linear + index) = value;
    return;
  }
  const __half2 low = __floats2half2_rn(value.x, value.y);
  const __half2 high = __floats2half2_rn(value.z, value.w);
  const uint2 bits{*reinterpret_cast<const unsigned*>(&low),
                   *reinterpret_cast<const unsigned*>(&high)};
  surf2DLayeredwrite(bits, a.surface, col * static_cast<int>(sizeof(__half)), row, a.layer);
}

__device__ __forceinline__ std::size_t pixel_index(int row, int col, int pitch) {
  return static_cast<std::size_t>(row) * static_cast<std::size_t>(pitch) +
         static_cast<std::size_t>(col);
}

// The per-projection update, one thread per pixel, entry blockIdx.z of the batch: the old value
// goes into the entry's scratch as new - old or old, then the new value overwrites the slot in
// place. The new value is read at the entry's row pitch: from the ramp filter's padded rows, this
// pass is also the filter's crop.
__global__ void replace_slots_kernel(const __grid_constant__ ReplaceBatch batch) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= batch.cols || row >= batch.rows) return;
  const ReplaceEntry& e = batch.entries[blockIdx.z];
  const std::size_t index = pixel_index(row, col, batch.cols);
  const float fresh = e.projection[pixel_index(row, col, e.row_pitch)];
  const float old_value = e.scratch_mode != kScratchUnchanged
                              ? load_texel(e.slot, batch.half_texels, row, col, index)
                              : 0.0f;
  const ReplacedPixel r = replace_pixel(fresh, old_value, e.scratch_mode, batch);
  if (e.scratch_mode != kScratchUnchanged)
    store_texel(e.scratch, batch.half_texels, row, col, index, r.scratch);
  store_texel(e.slot, batch.half_texels, row, col, index, r.texel);
}

// The same update, kQuad neighbouring pixels of a row per thread, for fp32 rows or fp16 texels
// where every access can be a whole quad: columns and row pitches multiples of kQuad, projections
// 16-byte aligned (takes_quads).
__global__ void replace_slots_quad_kernel(const __grid_constant__ ReplaceBatch batch) {
  const int col = kQuad * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= batch.cols || row >= batch.rows) return;
  const ReplaceEntry& e = batch.entries[blockIdx.z];
  const std::size_t index = pixel_index(row, col, batch.cols);
  const float4 fresh =
      *reinterpret_cast<const float4*>(e.projection + pixel_index(row, col, e.row_pitch));
  const bool keep = e.scratch_mode != kScratchUnchanged;
  const float4 old_value = keep ? load_quad(e.slot, row, col, index) : float4{};
  const ReplacedPixel x = replace_pixel(fresh.x, old_value.x, e.scratch_mode, batch);
  const ReplacedPixel y = replace_pixel(fresh.y, old_value.y, e.scratch_mode, batch);
  const ReplacedPixel z = replace_pixel(fresh.z, old_value.z, e.scratch_mode, batch);
  const ReplacedPixel w = replace_pixel(fresh.w, old_value.w, e.scratch_mode, batch);
  if (keep) {
    store_quad(e.scratch, row, col, index, float4{x.scratch, y.scratch, z.scratch, w.scratch});
  }
  store_quad(e.slot, row, col, index, float4{x.texel, y.texel, z.texel, w.texel});
}

// A layer (fp32 or fp16 texels) as fp32 rows x cols floats.
__global__ void read_layer_kernel(SlotAccess layer, int half_texels, int rows, int cols,
                                  float* out) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= cols || row >= rows) return;
  const std::size_t index = static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) +
                            static_cast<std::size_t>(col);
  out[index] = load_texel(layer, half_texels, row, col, index);
}

// Zeroes layer blockIdx.z of a layered array (fp32 or fp16 texels).
__global__ void clear_layers_kernel(cudaSurfaceObject_t surface, int half_texels, int rows,
                                    int cols) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= cols || row >= rows) return;
  store_texel({surface, nullptr, static_cast<int>(blockIdx.z)}, half_texels, row, col, 0, 0.0f);
}

int scratch_mode_of(ScratchContent content) {
  switch (content) {
    case ScratchContent::kDifference:
      return kScratchDifference;
    case ScratchContent::kOldProjection:
      return kScratchOld;
    default:
      return kScratchUnchanged;
  }
}

}  // namespace
}  // namespace slicestream::cuda
