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
  // The texture layer; for a record of quarter-turn pairs (DeviceTarget::centre_line ==
  // kQuarterTurnPairs), by how many quarter turns the partner's sample is ahead in the thread's
  // orbit (1 or 3).
  int layer;
  // The filtered texture object (kTexture), the projection's first float (kExact) or its layer's
  // centre line (kCentreLine: TextureRef::centre_line).
  unsigned long long source;
};
static_assert(sizeof(DeviceRecord) == 64, "records are copied as four 16-byte words");

// How a launch samples its sources: the store's texture (fp32 or fp16 texels), its texture of
// mirrored fp16 pairs (ProjectionStorage::kTextureHalfMirrored), or fp32 rows with fp32 weights.
// Within a texture launch, a target whose every point projects onto the detector's centre line
// samples the layers' centre lines (kCentreLine).
enum class SampleKind { kTexture, kMirroredTexture, kExact, kCentreLine };

// DeviceTarget::centre_line.
constexpr int kNoCentreLine = 0;
constexpr int kSingleLines = 1;
constexpr int kQuarterTurnPairs = 2;
// Rows per thread of a quarter-turn target: each with its three images under the quarter turn.
constexpr int kQuarterTurnRows = 2;
struct DeviceTarget {
  float* data;  // the first plane of the launch
  int width;
  int height;
  // Mirrored pairs only: every source maps rows j and height - 1 - j of the target onto mirrored
  // detector rows of one column, so a thread computes a row that projects onto the upper half of
  // the detector and its mirror row from the same fetches. The target's first (height + 1) / 2
  // rows project there, or, `flipped`, its last.
  int paired;
  int flipped;
  // Texture launches: every source maps every point onto the detector's centre line, read from the
  // records' centre lines (kCentreLine), one source per record (kSingleLines) or a source and its
  // partner a quarter turn away per record (kQuarterTurnPairs: the partner's line lies
  // `partner_offset` entries after the record's).
  int centre_line;
  int partner_offset;
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
  // The first spread_blocks blocks of the layout (the quarter-turn targets') are spread evenly
  // through the launch (layout_block); 0: the launch runs the layout in order.
  int spread_blocks;
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

// Where column `col` falls on a centre line: entry floor(col) + 2 holds the values at floor(col)
// and the column after it (zero outside the detector, so clamping to [-2, cols] reads zeros beyond
// it; fmaxf maps NaN to -2), and the fraction between them.
struct LinePosition {
  int entry;
  float fraction;
};

__device__ __forceinline__ LinePosition line_position(float col, int cols) {
  const float x = fminf(fmaxf(col, -2.0f), static_cast<float>(cols));
  const float x0 = floorf(x);
  return {static_cast<int>(x0) + 2, x - x0};
}

__device__ __forceinline__ float line_value(const float2* line, LinePosition at) {
  const float2 pair = __ldg(line + at.entry);
  return fmaf(at.fraction, pair.y - pair.x, pair.x);
}

// Bilinear sample at continuous detector position (col, row): pixel centres at integers,
// zero outside the detector.
template <SampleKind kSample>
__device__ __forceinline__ float sample(const DeviceRecord& rec, float col, float row, int rows,
                                        int cols) {
  if constexpr (kSample == SampleKind::kTexture) {
    return tex2DLayered<float>(static_cast<cudaTextureObject_t>(rec.source), col + 0.5f, row + 0.5f,
                               rec.layer);
  } else if constexpr (kSample == SampleKind::kCentreLine) {
    return line_value(reinterpret_cast<const float2*>(rec.source), line_position(col, cols));
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

// Adds weight x the sample at (col, row) to `acc`. From mirrored pairs, a paired point (one that
// projects onto the upper half) takes channel x and its mirror image channel y of one fetch; any
// other point below the detector's centre is fetched at its mirror row (rows - 1 - row), from the
// texel's other channel.
template <SampleKind kSample, bool kPaired>
__device__ __forceinline__ void accumulate(const DeviceRecord& rec, float col, float row,
                                           float weight, int rows, int cols, float& acc,
                                           float& mirror) {
  if constexpr (kSample == SampleKind::kMirroredTexture) {
    const auto texture = static_cast<cudaTextureObject_t>(rec.source);
    if constexpr (kPaired) {
      const float2 pair = tex2DLayered<float2>(texture, col + 0.5f, row + 0.5f, rec.layer);
      acc = fmaf(weight, pair.x, acc);
      mirror = fmaf(weight, pair.y, mirror);
    } else {
      const float last = static_cast<float>(rows - 1);
      const bool lower = row > 0.5f * last;
      const float2 pair =
          tex2DLayered<float2>(texture, col + 0.5f, (lower ? last - row : row) + 0.5f, rec.layer);
      acc = fmaf(weight, lower ? pair.y : pair.x, acc);
    }
  } else {
    acc = fmaf(weight, sample<kSample>(rec, col, row, rows, cols), acc);
  }
}

__device__ __forceinline__ float at_point(const float* v, float i, float j, float k) {
  return fmaf(k, v[3], fmaf(j, v[2], fmaf(i, v[1], v[0])));
}

// 1 / x to about an ulp in one instruction. The portable approximations (__fdividef, 1.0f / x
// with fast math) add a rescaling around it for denormal x, seven instructions per sample here;
// x is a point's depth along the source's ray (cone beam), never denormal, and a denormal would
// overflow the reciprocal either way.
__device__ __forceinline__ float reciprocal(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// Adds source `rec`'s contribution to a thread's kPoints points, spaced `stride` rows apart (and,
// kPaired, to their mirror images in `mirror`).
template <bool kCone, SampleKind kSample, int kPoints, bool kPaired>
__device__ __forceinline__ void add_source(const DeviceRecord& rec, float fi, float fj, float fk,
                                           float stride, int rows, int cols, float* acc,
                                           float* mirror) {
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
      const float inv = den > 0.0f ? reciprocal(den) : 0.0f;  // behind the source: 0
      const float col = fmaf(fq, dc, c0) * inv;
      const float row = fmaf(fq, dr, r0) * inv;
      accumulate<kSample, kPaired>(rec, col, row, rec.weight * inv * inv, rows, cols, acc[q],
                                   mirror[q]);
    }
  } else {
#pragma unroll
    for (int q = 0; q < kPoints; ++q) {
      const float fq = static_cast<float>(q);
      accumulate<kSample, kPaired>(rec, fmaf(fq, dc, c0), fmaf(fq, dr, r0), rec.weight, rows, cols,
                                   acc[q], mirror[q]);
    }
  }
}

// Rows of its own a thread of a paired target takes for a kernel of kPoints points per thread:
// each comes with its mirror row, so that a thread holds kPoints sums either way.
__host__ __device__ constexpr int paired_rows_per_thread(int points) {
  return points > 1 ? points / 2 : 1;
}

// Copies records [first, first + count) of the launch into the block's shared memory, once every
// thread has finished with the previous ones. All threads of the block call it (threads past their
// target's edge help).
template <int kMaxRecords>
__device__ __forceinline__ void stage_records(const LaunchParams<kMaxRecords>& params, int first,
                                              int count, DeviceRecord* staged) {
  const int thread = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  const int threads = static_cast<int>(blockDim.x * blockDim.y);
  __syncthreads();  // the previous records are no longer read
  const int4* from = reinterpret_cast<const int4*>(&params.records[first]);
  int4* to = reinterpret_cast<int4*>(staged);
  for (int w = thread; w < count * 4; w += threads)
    to[w] = from[w];
  __syncthreads();
}

// A recompute's launches after its first start early (KernelLaunch::set_start_early: programmatic
// dependent launch), while the previous launch's last blocks still run. Every block lets the next
// launch start once all of this launch's blocks have started, and waits for the previous launch to
// finish (its writes visible) before it reads or writes its target: the previous launch may have
// written that target. Both are no-ops in a launch that does not start early.
__device__ __forceinline__ void let_next_launch_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_previous_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// One block's tile: blockDim.x x (blockDim.y * kRows) thread rows of one plane of one target;
// each thread takes kRows points spaced blockDim.y rows apart (coalesced writes per row). The
// detector coordinates are affine in the grid indices, so each thread evaluates them once per
// source and steps with one FMA per point. The block stages its target's records in shared memory
// kStagedRecords at a time; threads past the target's edge help with the staging. kPaired: the
// thread rows are the (height + 1) / 2 rows of the target that project onto the upper half of the
// detector (its first rows, or its last ones where `flipped`), and each thread also writes the
// mirror rows of its points.
template <bool kCone, SampleKind kSample, int kRows, bool kPaired, int kMaxRecords>
__device__ __forceinline__ void backproject_tile(const LaunchParams<kMaxRecords>& params,
                                                 const DeviceTarget& target, int tile_x, int tile_y,
                                                 int plane, DeviceRecord* staged) {
  const int i = tile_x * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  const int j0 = tile_y * static_cast<int>(blockDim.y) * kRows + static_cast<int>(threadIdx.y);
  const bool flipped = kPaired && target.flipped != 0;
  const int covered = kPaired ? (target.height + 1) / 2 : target.height;  // rows with a thread
  const bool inside = i < target.width && j0 < covered;

  // Thread row q: j0 + q * blockDim.y (may lie past the rows with a thread); its point's row runs
  // the other way in a flipped target.
  const auto slot = [&](int q) { return j0 + q * static_cast<int>(blockDim.y); };
  const auto row = [&](int q) { return flipped ? target.height - 1 - slot(q) : slot(q); };
  const auto mirror_row = [&](int q) { return target.height - 1 - row(q); };
  const float fi = static_cast<float>(i);
  const float fj = static_cast<float>(row(0));
  const float fk = static_cast<float>(plane);
  const float stride =
      static_cast<float>(flipped ? -static_cast<int>(blockDim.y) : static_cast<int>(blockDim.y));

  const std::size_t plane_offset = static_cast<std::size_t>(plane) *
                                   static_cast<std::size_t>(target.height) *
                                   static_cast<std::size_t>(target.width);
  float* const column = target.data + plane_offset + static_cast<std::size_t>(i);
  const auto point_at = [&](int j) {
    return column + static_cast<std::size_t>(j) * static_cast<std::size_t>(target.width);
  };
  // An accumulating launch loads the points' values first, so that their latency passes while the
  // samples are fetched instead of after them (kept apart from the sums, which are added to them
  // last, as a plain accumulation would).
  if (target.accumulate) wait_for_previous_launch();
  float prior[kRows];
  float acc[kRows];
  float mirror_prior[kRows];  // kPaired only (unused arrays cost nothing)
  float mirror_acc[kRows];
#pragma unroll
  for (int q = 0; q < kRows; ++q) {
    const bool loaded = inside && target.accumulate && slot(q) < covered;
    prior[q] = loaded ? *point_at(row(q)) : 0.0f;
    acc[q] = 0.0f;
    if constexpr (kPaired) {
      mirror_prior[q] = loaded ? *point_at(mirror_row(q)) : 0.0f;
      mirror_acc[q] = 0.0f;
    }
  }

  for (int first = target.record_begin; first < target.record_end; first += kStagedRecords) {
    const int count = min(kStagedRecords, target.record_end - first);
    stage_records(params, first, count, staged);
    if (!inside) continue;
    for (int r = 0; r < count; ++r) {
      add_source<kCone, kSample, kRows, kPaired>(staged[r], fi, fj, fk, stride, params.rows,
                                                 params.cols, acc, mirror_acc);
    }
  }
  if (!inside) return;
  if (!target.accumulate) wait_for_previous_launch();

#pragma unroll
  for (int q = 0; q < kRows; ++q) {
    if (slot(q) >= covered) continue;
    *point_at(row(q)) = target.accumulate ? prior[q] + acc[q] : acc[q];
    // The middle row of an odd height is its own mirror image: written once.
    if (kPaired && mirror_row(q) != row(q)) {
      *point_at(mirror_row(q)) =
          target.accumulate ? mirror_prior[q] + mirror_acc[q] : mirror_acc[q];
    }
  }
}

// Point (i, j) of a square n x n target turned by k quarter turns about its centre, k in 0..3:
// (i, j), (n - 1 - j, i), (n - 1 - i, n - 1 - j), (j, n - 1 - i).
template <int kTurns>
__device__ __forceinline__ void turned(int n1, int i, int j, int& ti, int& tj) {
  if constexpr (kTurns == 0) {
    ti = i;
    tj = j;
  } else if constexpr (kTurns == 1) {
    ti = n1 - j;
    tj = i;
  } else if constexpr (kTurns == 2) {
    ti = n1 - i;
    tj = n1 - j;
  } else {
    ti = j;
    tj = n1 - i;
  }
}

// Adds a quarter-turn pair's samples for the thread's points turned by kTurns (row q of image
// kTurns in acc[kTurns][q]): the record's source at each point, and its partner's, which sees there
// the point kShift quarter turns further on (acc[(kTurns + kShift) % 4][q]). One evaluation of
// column, depth and weight and two 8-byte loads serve two samples.
template <bool kCone, int kTurns, int kShift, int kRows>
__device__ __forceinline__ void add_turned_pair(const DeviceRecord& rec, int partner_offset, int n1,
                                                int i, int j0, int stride, int cols,
                                                float (&acc)[4][kRows]) {
  int ti;
  int tj;
  turned<kTurns>(n1, i, j0, ti, tj);
  // The point of row q lies q * stride further along j; turned, along +-i or +-j.
  int si;
  int sj;
  turned<kTurns>(0, 0, stride, si, sj);  // the turned step with n - 1 = 0: (0, s), (-s, 0), ...
  const float fi = static_cast<float>(ti);
  const float fj = static_cast<float>(tj);
  const float c0 = fmaf(fj, rec.col[2], fmaf(fi, rec.col[1], rec.col[0]));
  const float dc = static_cast<float>(si) * rec.col[1] + static_cast<float>(sj) * rec.col[2];
  const float d0 = kCone ? fmaf(fj, rec.den[2], fmaf(fi, rec.den[1], rec.den[0])) : 1.0f;
  const float dd =
      kCone ? static_cast<float>(si) * rec.den[1] + static_cast<float>(sj) * rec.den[2] : 0.0f;
  const float2* const line = reinterpret_cast<const float2*>(rec.source);
#pragma unroll
  for (int q = 0; q < kRows; ++q) {
    const float fq = static_cast<float>(q);
    float col = fmaf(fq, dc, c0);
    float weight = rec.weight;
    if constexpr (kCone) {
      const float den = fmaf(fq, dd, d0);
      const float inv = den > 0.0f ? reciprocal(den) : 0.0f;  // behind the source: 0
      col *= inv;
      weight *= inv * inv;
    }
    const LinePosition at = line_position(col, cols);
    acc[kTurns][q] = fmaf(weight, line_value(line, at), acc[kTurns][q]);
    acc[(kTurns + kShift) % 4][q] =
        fmaf(weight, line_value(line + partner_offset, at), acc[(kTurns + kShift) % 4][q]);
  }
}

template <bool kCone, int kShift, int kRows>
__device__ __forceinline__ void add_quarter_turn_pair(const DeviceRecord& rec, int partner_offset,
                                                      int n1, int i, int j0, int stride, int cols,
                                                      float (&acc)[4][kRows]) {
  add_turned_pair<kCone, 0, kShift>(rec, partner_offset, n1, i, j0, stride, cols, acc);
  add_turned_pair<kCone, 1, kShift>(rec, partner_offset, n1, i, j0, stride, cols, acc);
  add_turned_pair<kCone, 2, kShift>(rec, partner_offset, n1, i, j0, stride, cols, acc);
  add_turned_pair<kCone, 3, kShift>(rec, partner_offset, n1, i, j0, stride, cols, acc);
}

// One block's tile of a square target of even side n sampled from quarter-turn pairs of centre
// lines: the threads cover the quadrant [0, n/2) x [0, n/2), kRows rows each, blockDim.y apart, and
// every point comes with its three images under the quarter turn about the target's centre (the
// four points tile the target once). Every record is a source and its partner a quarter turn away,
// which sees each point where the source sees its image: the thread holds all four, so both
// samples of one column evaluation land in its sums.
template <bool kCone, int kRows, int kMaxRecords>
__device__ __forceinline__ void backproject_quarter_turn_tile(
    const LaunchParams<kMaxRecords>& params, const DeviceTarget& target, int tile_x, int tile_y,
    DeviceRecord* staged) {
  const int half = target.width / 2;
  const int n1 = target.width - 1;
  const int i = tile_x * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
  const int j0 = tile_y * static_cast<int>(blockDim.y) * kRows + static_cast<int>(threadIdx.y);
  const int stride = static_cast<int>(blockDim.y);
  const bool inside = i < half && j0 < half;

  const auto point_at = [&](int turns, int q) {
    int ti = 0;
    int tj = 0;
    const int j = j0 + q * stride;
    switch (turns) {
      case 0:
        turned<0>(n1, i, j, ti, tj);
        break;
      case 1:
        turned<1>(n1, i, j, ti, tj);
        break;
      case 2:
        turned<2>(n1, i, j, ti, tj);
        break;
      default:
        turned<3>(n1, i, j, ti, tj);
        break;
    }
    return target.data + static_cast<std::size_t>(tj) * static_cast<std::size_t>(target.width) +
           static_cast<std::size_t>(ti);
  };
  if (target.accumulate) wait_for_previous_launch();
  float prior[4][kRows];
  float acc[4][kRows];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
#pragma unroll
    for (int q = 0; q < kRows; ++q) {
      const bool loaded = inside && target.accumulate && j0 + q * stride < half;
      prior[k][q] = loaded ? *point_at(k, q) : 0.0f;
      acc[k][q] = 0.0f;
    }
  }
  for (int first = target.record_begin; first < target.record_end; first += kStagedRecords) {
    const int count = min(kStagedRecords, target.record_end - first);
    stage_records(params, first, count, staged);
    if (!inside) continue;
    for (int r = 0; r < count; ++r) {
      // The partner's direction is the same for the whole block: a uniform branch.
      if (staged[r].layer == 1) {
        add_quarter_turn_pair<kCone, 1, kRows>(staged[r], target.partner_offset, n1, i, j0, stride,
                                               params.cols, acc);
      } else {
        add_quarter_turn_pair<kCone, 3, kRows>(staged[r], target.partner_offset, n1, i, j0, stride,
                                               params.cols, acc);
      }
    }
  }
  if (!inside) return;
  if (!target.accumulate) wait_for_previous_launch();
#pragma unroll
  for (int k = 0; k < 4; ++k) {
#pragma unroll
    for (int q = 0; q < kRows; ++q) {
      if (j0 + q * stride >= half) continue;
      *point_at(k, q) = target.accumulate ? prior[k][q] + acc[k][q] : acc[k][q];
    }
  }
}

// The block of the layout that launch position `position` runs: with `spread` leading layout
// blocks among `total`, position p runs a leading block where floor((p + 1) spread / total) steps
// past floor(p spread / total) (a Bresenham line: every leading block once, evenly apart), the
// others in order in between.
__host__ __device__ __forceinline__ int layout_block(int position, int spread, int total) {
  if (spread == 0) return position;
  const long long before = static_cast<long long>(position) * spread / total;
  const long long through = (static_cast<long long>(position) + 1) * spread / total;
  return through > before ? static_cast<int>(before) : spread + position - static_cast<int>(before);
}

// One block of a launch: it finds its target and tile and backprojects it, kPoints points per
// thread (a paired target's threads take half as many rows, each with its mirror row).
template <bool kCone, SampleKind kSample, int kPoints, int kMaxRecords, bool kQuarterTurns>
__device__ __forceinline__ void backproject_block(const LaunchParams<kMaxRecords>& params) {
  let_next_launch_start();
  __shared__ DeviceRecord staged[kStagedRecords];
  const int block =
      layout_block(static_cast<int>(blockIdx.x), params.spread_blocks, static_cast<int>(gridDim.x));
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
  if constexpr (kSample != SampleKind::kExact) {
    if constexpr (kQuarterTurns) {
      if (target.centre_line == kQuarterTurnPairs) {
        backproject_quarter_turn_tile<kCone, kQuarterTurnRows>(params, target, tile_x, tile_y,
                                                               staged);
        return;
      }
    }
    if (target.centre_line != kNoCentreLine) {
      backproject_tile<kCone, SampleKind::kCentreLine, kPoints, false>(params, target, tile_x,
                                                                       tile_y, plane, staged);
      return;
    }
  }
  if constexpr (kSample == SampleKind::kMirroredTexture) {
    if (target.paired != 0) {
      backproject_tile<kCone, kSample, paired_rows_per_thread(kPoints), true>(
          params, target, tile_x, tile_y, plane, staged);
      return;
    }
  }
  backproject_tile<kCone, kSample, kPoints, false>(params, target, tile_x, tile_y, plane, staged);
}

template <bool kCone, SampleKind kSample, int kPoints, int kMaxRecords>
__global__ void backproject_kernel(const __grid_constant__ LaunchParams<kMaxRecords> params) {
  backproject_block<kCone, kSample, kPoints, kMaxRecords, false>(params);
}

// Registers a launch with a quarter-turn target may take: as many as the kernel without it needs
// for kPoints points, so that the launch's other targets keep their occupancy (the quarter-turn
// tile alone would take more).
__host__ __device__ constexpr int quarter_turn_registers(int points) {
  return points <= 4 ? 48 : points <= 8 ? 72 : 96;
}

template <bool kCone, SampleKind kSample, int kPoints, int kMaxRecords>
__global__ void __maxnreg__(quarter_turn_registers(kPoints))
    backproject_quarter_turn_kernel(const __grid_constant__ LaunchParams<kMaxRecords> params) {
  backproject_block<kCone, kSample, kPoints, kMaxRecords, true>(params);
}

}  // namespace slicestream::cuda::detail
