// The kernels of the projection store's updates (projection_texture_store.cu, their only
// includer, hence the unnamed namespace): the per-projection replacement of a batch of slots, in
// texture layers (fp32 or fp16 texels) or linear memory, zeroing layers and reading one back as
// fp32.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda/projection_texture_store.hpp"

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
  int half_texels;  // the slots' layers hold fp16 (scratch layers are always fp32)
  // With fp16 texels: the store's count of clamped values (page-locked host memory).
  unsigned long long* out_of_range;
};

// The largest finite fp16 value.
constexpr float kHalfMax = 65504.0f;

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

// The per-projection update, one thread per pixel, entry blockIdx.z of the batch: the old value
// goes into the entry's scratch as new - old or old, then the new value overwrites the slot in
// place. With fp16 texels the difference is taken from the values as stored (the new one rounded
// first, or clamped to fp16's range), so that the live slices and a recompute from the store
// agree. The new value is read at the entry's row pitch: from the ramp filter's padded rows, this
// pass is also the filter's crop.
__global__ void replace_slots_kernel(const __grid_constant__ ReplaceBatch batch) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= batch.cols || row >= batch.rows) return;
  const ReplaceEntry& e = batch.entries[blockIdx.z];
  const std::size_t index = static_cast<std::size_t>(row) * static_cast<std::size_t>(batch.cols) +
                            static_cast<std::size_t>(col);
  float fresh = e.projection[static_cast<std::size_t>(row) * static_cast<std::size_t>(e.row_pitch) +
                             static_cast<std::size_t>(col)];
  if (batch.half_texels != 0) fresh = as_half_texel(fresh, batch.out_of_range);
  if (e.scratch_mode != kScratchUnchanged) {
    const float old_value = load_texel(e.slot, batch.half_texels, row, col, index);
    const float value = e.scratch_mode == kScratchDifference ? fresh - old_value : old_value;
    store_texel(e.scratch, 0, row, col, index, value);
  }
  store_texel(e.slot, batch.half_texels, row, col, index, fresh);
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
