// The kernels of the projection store's updates (projection_texture_store.cu, their only
// includer, hence the unnamed namespace): the per-projection replacement of a batch of slots in
// the texture layers and the plain copy, the same for the quad copy, and the texture layers
// brought up to date from the linear copy.
#pragma once

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

struct ReplacePixelsEntry {
  const float* projection;
  float* slot_plain;     // null without a plain copy
  float* scratch_plain;  // this entry's scratch in the plain copy (null without one)
  cudaSurfaceObject_t slot_surface;
  int layer;
  int scratch_layer;
  int scratch_mode;
};

struct ReplacePixelsBatch {
  ReplacePixelsEntry entries[kMaxReplaceBatch];
  cudaSurfaceObject_t scratch_surface;
  int rows;
  int cols;
  int write_layers;  // 0: the texture layers are skipped (a linear copy exists)
};

// The per-projection update of the texture layer and the plain copy, one thread per pixel, entry
// blockIdx.z of the batch: the old value (from the plain copy when there is one, else through the
// surface) goes into the entry's scratch as new - old or old, then the new value overwrites the
// slot in place.
__global__ void replace_pixels_kernel(const __grid_constant__ ReplacePixelsBatch batch) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= batch.cols || row >= batch.rows) return;
  const ReplacePixelsEntry& e = batch.entries[blockIdx.z];
  const std::size_t index = static_cast<std::size_t>(row) * static_cast<std::size_t>(batch.cols) +
                            static_cast<std::size_t>(col);
  const int x_bytes = col * static_cast<int>(sizeof(float));
  const float fresh = e.projection[index];
  if (e.scratch_mode != kScratchUnchanged) {
    float old_value = 0.0f;
    if (e.slot_plain != nullptr) {
      old_value = e.slot_plain[index];
    } else {
      surf2DLayeredread(&old_value, e.slot_surface, x_bytes, row, e.layer);
    }
    const float value = e.scratch_mode == kScratchDifference ? fresh - old_value : old_value;
    if (batch.write_layers != 0) {
      surf2DLayeredwrite(value, batch.scratch_surface, x_bytes, row, e.scratch_layer);
    }
    if (e.scratch_plain != nullptr) e.scratch_plain[index] = value;
  }
  if (batch.write_layers != 0) surf2DLayeredwrite(fresh, e.slot_surface, x_bytes, row, e.layer);
  if (e.slot_plain != nullptr) e.slot_plain[index] = fresh;
}

__device__ __forceinline__ float texel_or_zero(const float* __restrict__ p, int r, int c, int rows,
                                               int cols) {
  return (r >= 0 && r < rows && c >= 0 && c < cols)
             ? p[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) +
                 static_cast<std::size_t>(c)]
             : 0.0f;
}

struct ReplaceQuadsEntry {
  const float* projection;
  float4* slot_quads;
  float4* scratch_quads;  // this entry's scratch quads (null: scratch unchanged)
  int scratch_mode;
};

struct ReplaceQuadsBatch {
  ReplaceQuadsEntry entries[kMaxReplaceBatch];
  int rows;
  int cols;
};

// The quad copy, one thread per quad (r, c), r in [-1, rows - 1], c in [-1, cols - 1], entry
// blockIdx.z: the new quad is built from the projection; the scratch gets new - old or old (old
// read from the slot's quads), then the slot's quad is overwritten.
__global__ void replace_quads_kernel(const __grid_constant__ ReplaceQuadsBatch batch) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) - 1;
  const int r = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y) - 1;
  const int rows = batch.rows;
  const int cols = batch.cols;
  if (c >= cols || r >= rows) return;
  const ReplaceQuadsEntry& e = batch.entries[blockIdx.z];
  const std::size_t index = static_cast<std::size_t>(r + 1) * static_cast<std::size_t>(cols + 1) +
                            static_cast<std::size_t>(c + 1);
  const float4 fresh = make_float4(texel_or_zero(e.projection, r, c, rows, cols),
                                   texel_or_zero(e.projection, r, c + 1, rows, cols),
                                   texel_or_zero(e.projection, r + 1, c, rows, cols),
                                   texel_or_zero(e.projection, r + 1, c + 1, rows, cols));
  if (e.scratch_mode != kScratchUnchanged) {
    const float4 old_quad = e.slot_quads[index];
    e.scratch_quads[index] = e.scratch_mode == kScratchDifference
                                 ? make_float4(fresh.x - old_quad.x, fresh.y - old_quad.y,
                                               fresh.z - old_quad.z, fresh.w - old_quad.w)
                                 : old_quad;
  }
  e.slot_quads[index] = fresh;
}

// Texture layers from the linear copy: layer blockIdx.z of an array whose first slot is
// `first_slot`, from the plain copy or (without one) the quads' top-left texels.
__global__ void layers_from_linear_kernel(cudaSurfaceObject_t surface, const float* plain,
                                          const float4* quads, int first_slot, int rows, int cols) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= cols || row >= rows) return;
  const int layer = static_cast<int>(blockIdx.z);
  const std::size_t slot = static_cast<std::size_t>(first_slot + layer);
  float value = 0.0f;
  if (plain != nullptr) {
    const std::size_t pixels = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    value = plain[slot * pixels + static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) +
                  static_cast<std::size_t>(col)];
  } else {
    const std::size_t per_slot =
        static_cast<std::size_t>(rows + 1) * static_cast<std::size_t>(cols + 1);
    value = quads[slot * per_slot +
                  static_cast<std::size_t>(row + 1) * static_cast<std::size_t>(cols + 1) +
                  static_cast<std::size_t>(col + 1)]
                .x;
  }
  surf2DLayeredwrite(value, surface, col * static_cast<int>(sizeof(float)), row, layer);
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
