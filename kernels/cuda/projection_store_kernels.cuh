// The kernels of the projection store's updates (projection_texture_store.cu, their only
// includer, hence the unnamed namespace): the per-projection replacement of a batch of slots, in
// texture layers (fp32 or fp16 texels, or mirrored fp16 pairs) or linear memory, with the
// texture layers' centre lines, zeroing layers and reading one back as fp32.
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
  float2* slot_line;     // texture storage: the slot's centre line
  float2* scratch_line;  // and its scratch layer's
};

struct ReplaceBatch {
  ReplaceEntry entries[kMaxReplaceBatch];
  int rows;
  int cols;
  int half_texels;  // the slots' and the scratch layers' texels are fp16
  int texel_rows;   // rows of a layer: rows, or mirrored_texel_rows(rows) for mirrored pairs
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
// range are clamped to it (NaN to zero) and counted (unless `out_of_range` is null: a value
// stored twice is counted once): an infinity in a slot would turn every difference new - old it
// takes part in, and with it every slice, into NaN.
__device__ __forceinline__ float as_half_texel(float value, unsigned long long* out_of_range) {
  if (!(fabsf(value) <= kHalfMax)) {
    if (out_of_range != nullptr) atomicAdd(out_of_range, 1ULL);
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
// `counted`: whether this copy of the pixel counts its clamped values (mirrored pairs store the
// centre rows twice).
__device__ __forceinline__ ReplacedPixel replace_pixel(float fresh, float old_value, int mode,
                                                       const ReplaceBatch& batch,
                                                       bool counted = true) {
  const bool half = batch.half_texels != 0;
  unsigned long long* const counter = counted ? batch.out_of_range : nullptr;
  ReplacedPixel out{half ? as_half_texel(fresh, counter) : fresh, old_value};
  if (mode == kScratchDifference) {
    out.scratch = out.texel - old_value;
    if (half) out.scratch = as_half_texel(out.scratch, counter);
  }
  return out;
}

// The two projection rows texel row `r` of a mirrored layer holds, and whether it is the copy of
// each that counts (rows up to the centre are counted in channel x, the others in channel y of
// their mirror's texel row; the texel rows past the centre repeat rows counted elsewhere).
struct MirroredRows {
  int upper;  // channel x: row r
  int lower;  // channel y: row rows - 1 - r
  bool upper_counted;
  bool lower_counted;
};

__device__ __forceinline__ MirroredRows mirrored_rows(int r, int rows) {
  const int centre = (rows - 1) / 2;
  // Clamped for a one-row detector, whose second texel row only pads the layer (a fetch reads it
  // with weight 0); for two rows or more both rows lie on the detector.
  return {min(r, rows - 1), max(rows - 1 - r, 0), r <= centre, rows - 1 - r > centre};
}

// A mirrored pair as the 32 bits of its texel, and back.
__device__ __forceinline__ unsigned pack_pair(float x, float y) {
  const __half2 pair = __floats2half2_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&pair);
}

__device__ __forceinline__ float2 unpack_pair(unsigned bits) {
  return __half22float2(*reinterpret_cast<const __half2*>(&bits));
}

__device__ __forceinline__ float2 load_pair(const SlotAccess& a, int r, int col) {
  unsigned bits = 0;
  surf2DLayeredread(&bits, a.surface, col * static_cast<int>(sizeof(__half2)), r, a.layer);
  return unpack_pair(bits);
}

__device__ __forceinline__ void store_pair(const SlotAccess& a, int r, int col, float2 value) {
  surf2DLayeredwrite(pack_pair(value.x, value.y), a.surface,
                     col * static_cast<int>(sizeof(__half2)), r, a.layer);
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

// A centre line's value at column `col` from the middle rows' values as stored (one row for an odd
// height).
__device__ __forceinline__ float centre_line_value(float upper, float lower, int rows) {
  return (rows - 1) / 2 == rows / 2 ? upper : fmaf(0.5f, upper, 0.5f * lower);
}

// Column `col` of entry e's centre lines: the slot's takes `fresh`, the scratch layer's the
// difference to the old value or the old value, in fp32. Value v[col] lives in entry col + 2
// (first half) and entry col + 1 (second half); the entries' halves outside the detector are never
// written and stay zero.
__device__ __forceinline__ void replace_line_value(const ReplaceEntry& e, int col, float fresh) {
  float2* const slot = e.slot_line;
  const float old_value = slot[col + 2].x;
  if (e.scratch_mode != kScratchUnchanged) {
    const float scratch = e.scratch_mode == kScratchDifference ? fresh - old_value : old_value;
    e.scratch_line[col + 2].x = scratch;
    e.scratch_line[col + 1].y = scratch;
  }
  slot[col + 2].x = fresh;
  slot[col + 1].y = fresh;
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

// The same update in layers of mirrored fp16 pairs, one texel (two pixels: rows r and
// rows - 1 - r of a column) per thread, over the layer's texel rows.
__global__ void replace_slots_mirrored_kernel(const __grid_constant__ ReplaceBatch batch) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int r = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= batch.cols || r >= batch.texel_rows) return;
  const ReplaceEntry& e = batch.entries[blockIdx.z];
  const MirroredRows m = mirrored_rows(r, batch.rows);
  const float fresh_upper = e.projection[pixel_index(m.upper, col, e.row_pitch)];
  const float fresh_lower = e.projection[pixel_index(m.lower, col, e.row_pitch)];
  const bool keep = e.scratch_mode != kScratchUnchanged;
  const float2 old_pair = keep ? load_pair(e.slot, r, col) : float2{};
  const ReplacedPixel u =
      replace_pixel(fresh_upper, old_pair.x, e.scratch_mode, batch, m.upper_counted);
  const ReplacedPixel l =
      replace_pixel(fresh_lower, old_pair.y, e.scratch_mode, batch, m.lower_counted);
  if (keep) store_pair(e.scratch, r, col, float2{u.scratch, l.scratch});
  store_pair(e.slot, r, col, float2{u.texel, l.texel});
  // The centre texel row holds both middle rows: its thread keeps the centre line as well.
  if (r == (batch.rows - 1) / 2)
    replace_line_value(e, col, centre_line_value(u.texel, l.texel, batch.rows));
}

// kQuad pairs from byte `byte` of texel row `r` of a layer, in one 16-byte surface access: the
// pass is bound by its surface accesses, and smaller ones make it slower (docs/performance.md).
static_assert(kQuad * sizeof(unsigned) == sizeof(uint4), "a quad of pairs is one 16-byte access");
__device__ __forceinline__ void read_pairs(const SlotAccess& a, int byte, int r, unsigned* out) {
  uint4 v;
  surf2DLayeredread(&v, a.surface, byte, r, a.layer);
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
}

__device__ __forceinline__ void write_pairs(const SlotAccess& a, int byte, int r,
                                            const unsigned* in) {
  surf2DLayeredwrite(uint4{in[0], in[1], in[2], in[3]}, a.surface, byte, r, a.layer);
}

// The same, kQuad neighbouring texels of a texel row per thread (16-byte loads of each of the two
// rows, 16-byte surface accesses), under the conditions of replace_slots_quad_kernel.
__global__ void replace_slots_mirrored_quad_kernel(const __grid_constant__ ReplaceBatch batch) {
  const int col = kQuad * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int r = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= batch.cols || r >= batch.texel_rows) return;
  const ReplaceEntry& e = batch.entries[blockIdx.z];
  const MirroredRows m = mirrored_rows(r, batch.rows);
  const float4 upper =
      *reinterpret_cast<const float4*>(e.projection + pixel_index(m.upper, col, e.row_pitch));
  const float4 lower =
      *reinterpret_cast<const float4*>(e.projection + pixel_index(m.lower, col, e.row_pitch));
  const bool keep = e.scratch_mode != kScratchUnchanged;
  const int byte = col * static_cast<int>(sizeof(__half2));
  unsigned old_words[kQuad] = {};
  if (keep) read_pairs(e.slot, byte, r, old_words);
  const float fresh[2][kQuad] = {{upper.x, upper.y, upper.z, upper.w},
                                 {lower.x, lower.y, lower.z, lower.w}};
  unsigned texels[kQuad];
  unsigned scratch[kQuad];
#pragma unroll
  for (int c = 0; c < kQuad; ++c) {
    const float2 old_pair = unpack_pair(old_words[c]);
    const ReplacedPixel u =
        replace_pixel(fresh[0][c], old_pair.x, e.scratch_mode, batch, m.upper_counted);
    const ReplacedPixel l =
        replace_pixel(fresh[1][c], old_pair.y, e.scratch_mode, batch, m.lower_counted);
    texels[c] = pack_pair(u.texel, l.texel);
    scratch[c] = pack_pair(u.scratch, l.scratch);
    if (r == (batch.rows - 1) / 2) {
      replace_line_value(e, col + c, centre_line_value(u.texel, l.texel, batch.rows));
    }
  }
  if (keep) write_pairs(e.scratch, byte, r, scratch);
  write_pairs(e.slot, byte, r, texels);
}

// The centre lines of a batch's slots and scratch layers for fp32 or fp16 texels (the mirrored
// passes keep them themselves), one thread per column, entry blockIdx.y: the mean of the middle
// rows (rows - 1) / 2 and rows / 2 as the texels store them (fp16-rounded with fp16 texels; the
// texel pass counts what it clamps).
__global__ void replace_centre_lines_kernel(const __grid_constant__ ReplaceBatch batch) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (col >= batch.cols) return;
  const ReplaceEntry& e = batch.entries[blockIdx.y];
  const auto stored = [&](int row) {
    const float fresh = e.projection[pixel_index(row, col, e.row_pitch)];
    return batch.half_texels != 0 ? as_half_texel(fresh, nullptr) : fresh;
  };
  replace_line_value(
      e, col, centre_line_value(stored((batch.rows - 1) / 2), stored(batch.rows / 2), batch.rows));
}

// A layer (fp32 or fp16 texels, or mirrored fp16 pairs) as fp32 rows x cols floats.
__global__ void read_layer_kernel(SlotAccess layer, int half_texels, int mirrored, int rows,
                                  int cols, float* out) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= cols || row >= rows) return;
  const std::size_t index = static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) +
                            static_cast<std::size_t>(col);
  if (mirrored != 0) {
    const bool upper = row <= (rows - 1) / 2;
    const float2 pair = load_pair(layer, upper ? row : rows - 1 - row, col);
    out[index] = upper ? pair.x : pair.y;
    return;
  }
  out[index] = load_texel(layer, half_texels, row, col, index);
}

// Zeroes layer blockIdx.z of a layered array of texels of `texel_bytes` (2: fp16, 4: fp32 or a
// mirrored fp16 pair), rows x cols of them.
__global__ void clear_layers_kernel(cudaSurfaceObject_t surface, int texel_bytes, int rows,
                                    int cols) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= cols || row >= rows) return;
  const int layer = static_cast<int>(blockIdx.z);
  if (texel_bytes == 2) {
    surf2DLayeredwrite(static_cast<unsigned short>(0), surface, col * texel_bytes, row, layer);
  } else {
    surf2DLayeredwrite(0u, surface, col * texel_bytes, row, layer);
  }
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
