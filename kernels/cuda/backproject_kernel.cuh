// Device side of the backprojector: launch parameters (passed by value, so they live in the
// constant bank, one copy per launch: no shared symbol, no race between backends) and the kernel.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda/backprojector.hpp"

namespace slicestream::cuda::detail {

constexpr int kMaxTargetsPerLaunch = 8;
constexpr int kSmallLaunchRecords = 8;    // per-frame updates: small parameter block
constexpr int kBatchLaunchRecords = 64;   // batched per-frame updates: ~4.5 KB of parameters
constexpr int kLargeLaunchRecords = 480;  // full recomputes: up to ~31 KB of parameters

// One source as seen from one target: each of col, row and den numerators is affine in the grid
// indices, v(i, j, k) = v[0] + i v[1] + j v[2] + k v[3] (k relative to the first plane of the
// launch), evaluated in double on the host so that the kernel adds only small float terms.
// 64 bytes: blocks copy records into shared memory as four 16-byte words each.
struct alignas(16) DeviceRecord {
  float col[4];
  float row[4];
  float den[4];
  float weight;  // map.weight * source scale
  int layer;
  // The filtered texture object (kTexture) or the projection's first float (kExact).
  unsigned long long source;
};
static_assert(sizeof(DeviceRecord) == 64, "records are copied as four 16-byte words");

struct DeviceTarget {
  float* data;  // the first plane of the launch
  int width;
  int height;
  int tiles_x;
  int tiles_y;
  int block_begin;  // first block of this target (of its interleaved group) in the launch
  int group_size;   // targets of one interleaved group take turns block by block
  int record_begin;
  int record_end;
  int accumulate;
};

template <int kMaxRecords>
struct LaunchParams {
  DeviceTarget targets[kMaxTargetsPerLaunch];
  DeviceRecord records[kMaxRecords];
  int target_count;
  int rows;
  int cols;
};

static_assert(sizeof(LaunchParams<kLargeLaunchRecords>) <= 32764,
              "kernel parameters are limited to 32764 bytes");

// Records a block stages in shared memory at a time. Every warp reads the same record at the same
// time (a broadcast); read from the parameter bank with a run-time index instead, they miss the
// constant cache once a launch holds more records than it keeps.
constexpr int kStagedRecords = 32;

__device__ __forceinline__ float lerp2(float v00, float v10, float v01, float v11, float fx,
                                       float fy) {
  const float top = fmaf(fx, v10 - v00, v00);
  const float bottom = fmaf(fx, v11 - v01, v01);
  return fmaf(fy, bottom - top, top);
}

// Bilinear sample at continuous detector position (col, row): pixel centres at integers,
// zero outside the detector.
template <BackprojectInterpolation kInterp>
__device__ __forceinline__ float sample(const DeviceRecord& rec, float col, float row, int rows,
                                        int cols) {
  if constexpr (kInterp == BackprojectInterpolation::kTexture) {
    return tex2DLayered<float>(static_cast<cudaTextureObject_t>(rec.source), col + 0.5f, row + 0.5f,
                               rec.layer);
  } else {
    // Clamp first so that far-away (or non-finite) positions index safely; fmaxf maps NaN to -2.
    col = fminf(fmaxf(col, -2.0f), static_cast<float>(cols) + 1.0f);
    row = fminf(fmaxf(row, -2.0f), static_cast<float>(rows) + 1.0f);
    const float x0 = floorf(col);
    const float y0 = floorf(row);
    const int ix = static_cast<int>(x0);
    const int iy = static_cast<int>(y0);
    const bool x0_in = static_cast<unsigned>(ix) < static_cast<unsigned>(cols);
    const bool x1_in = static_cast<unsigned>(ix + 1) < static_cast<unsigned>(cols);
    const bool y0_in = static_cast<unsigned>(iy) < static_cast<unsigned>(rows);
    const bool y1_in = static_cast<unsigned>(iy + 1) < static_cast<unsigned>(rows);
    const float* p =
        reinterpret_cast<const float*>(rec.source) + static_cast<std::ptrdiff_t>(iy) * cols + ix;
    const float v00 = (x0_in && y0_in) ? __ldg(p) : 0.0f;
    const float v10 = (x1_in && y0_in) ? __ldg(p + 1) : 0.0f;
    const float v01 = (x0_in && y1_in) ? __ldg(p + cols) : 0.0f;
    const float v11 = (x1_in && y1_in) ? __ldg(p + cols + 1) : 0.0f;
    return lerp2(v00, v10, v01, v11, col - x0, row - y0);
  }
}

__device__ __forceinline__ float at_point(const float* v, float i, float j, float k) {
  return fmaf(k, v[3], fmaf(j, v[2], fmaf(i, v[1], v[0])));
}

// Adds source `rec`'s contribution to a thread's kPoints points, spaced `stride` rows apart.
template <bool kCone, BackprojectInterpolation kInterp, int kPoints>
__device__ __forceinline__ void add_source(const DeviceRecord& rec, float fi, float fj, float fk,
                                           float stride, int rows, int cols, float* acc) {
  const float c0 = at_point(rec.col, fi, fj, fk);
  const float r0 = at_point(rec.row, fi, fj, fk);
  const float dc = rec.col[2] * stride;
  const float dr = rec.row[2] * stride;
  if constexpr (kCone) {
    const float d0 = at_point(rec.den, fi, fj, fk);
    const float dd = rec.den[2] * stride;
#pragma unroll
    for (int q = 0; q < kPoints; ++q) {
      const float fq = static_cast<float>(q);
      const float den = fmaf(fq, dd, d0);
      const float inv = den > 0.0f ? __fdividef(1.0f, den) : 0.0f;  // behind the source: 0
      const float col = fmaf(fq, dc, c0) * inv;
      const float row = fmaf(fq, dr, r0) * inv;
      acc[q] = fmaf(rec.weight * inv * inv, sample<kInterp>(rec, col, row, rows, cols), acc[q]);
    }
  } else {
#pragma unroll
    for (int q = 0; q < kPoints; ++q) {
      const float fq = static_cast<float>(q);
      acc[q] = fmaf(rec.weight,
                    sample<kInterp>(rec, fmaf(fq, dc, c0), fmaf(fq, dr, r0), rows, cols), acc[q]);
    }
  }
}

// Each block covers blockDim.x x (blockDim.y * kPoints) points of one plane of one target; each
// thread takes kPoints points spaced blockDim.y rows apart (coalesced writes per row). The
// detector coordinates are affine in the grid indices, so each thread evaluates them once per
// source and steps with one FMA per point. The block stages its target's records in shared memory
// kStagedRecords at a time; threads past the target's edge help with the staging.
template <bool kCone, BackprojectInterpolation kInterp, int kPoints, int kMaxRecords>
__global__ void backproject_kernel(const __grid_constant__ LaunchParams<kMaxRecords> params) {
  __shared__ DeviceRecord staged[kStagedRecords];
  const int block = static_cast<int>(blockIdx.x);
  // The last target starting at or before this block; members of an interleaved group share
  // block_begin, so that is the group's last member.
  int t = 0;
  while (t + 1 < params.target_count && block >= params.targets[t + 1].block_begin)
    ++t;
  int local = block - params.targets[t].block_begin;
  const int group = params.targets[t].group_size;
  if (group > 1) {
    t += local % group - (group - 1);
    local /= group;
  }
  const DeviceTarget& target = params.targets[t];

  const int tiles_per_plane = target.tiles_x * target.tiles_y;
  const int plane = local / tiles_per_plane;
  const int in_plane = local - plane * tiles_per_plane;
  const int tile_y = in_plane / target.tiles_x;
  const int tile_x = in_plane - tile_y * target.tiles_x;
  const int i = tile_x * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  const int j0 = tile_y * static_cast<int>(blockDim.y) * kPoints + static_cast<int>(threadIdx.y);
  const bool inside = i < target.width && j0 < target.height;

  const float fi = static_cast<float>(i);
  const float fj = static_cast<float>(j0);
  const float fk = static_cast<float>(plane);
  const float stride = static_cast<float>(blockDim.y);
  const int thread = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  const int threads = static_cast<int>(blockDim.x * blockDim.y);

  const std::size_t plane_offset = static_cast<std::size_t>(plane) *
                                   static_cast<std::size_t>(target.height) *
                                   static_cast<std::size_t>(target.width);
  float* const column = target.data + plane_offset + static_cast<std::size_t>(i);
  // Point q of this thread: row j0 + q * blockDim.y, which may lie below the target.
  const auto row = [&](int q) { return j0 + q * static_cast<int>(blockDim.y); };
  const auto point = [&](int q) {
    return column + static_cast<std::size_t>(row(q)) * static_cast<std::size_t>(target.width);
  };
  // An accumulating launch loads the points' values first, so that their latency passes while the
  // samples are fetched instead of after them (kept apart from the sums, which are added to them
  // last, as a plain accumulation would).
  float prior[kPoints];
  float acc[kPoints];
#pragma unroll
  for (int q = 0; q < kPoints; ++q) {
    const bool loaded = inside && target.accumulate && row(q) < target.height;
    prior[q] = loaded ? *point(q) : 0.0f;
    acc[q] = 0.0f;
  }

  for (int first = target.record_begin; first < target.record_end; first += kStagedRecords) {
    const int count = min(kStagedRecords, target.record_end - first);
    __syncthreads();  // the previous records are no longer read
    const int4* from = reinterpret_cast<const int4*>(&params.records[first]);
    int4* to = reinterpret_cast<int4*>(staged);
    for (int w = thread; w < count * 4; w += threads)
      to[w] = from[w];
    __syncthreads();
    if (!inside) continue;
    for (int r = 0; r < count; ++r) {
      add_source<kCone, kInterp, kPoints>(staged[r], fi, fj, fk, stride, params.rows, params.cols,
                                          acc);
    }
  }
  if (!inside) return;

#pragma unroll
  for (int q = 0; q < kPoints; ++q) {
    if (row(q) < target.height) *point(q) = target.accumulate ? prior[q] + acc[q] : acc[q];
  }
}

}  // namespace slicestream::cuda::detail
