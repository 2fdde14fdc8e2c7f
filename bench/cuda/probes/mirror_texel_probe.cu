// Probe: can one texture fetch serve two voxels? In a circular scan whose source and detector
// centre lie in the z = 0 plane, the voxel (x, y, -z) projects onto the detector row mirrored about
// the centre of the one (x, y, z) projects onto, in the same column, for every angle. A layered
// RG16F texture of half the detector's height (plus one row) whose texel row r holds
// (P[r], P[rows - 1 - r]) stores each projection once, and one bilinear fetch at a point of the
// upper half returns the value for the point and for its mirror image.
//
// Measures, on Tomobank's shapes (300 projections of 2016 rows x 1800 columns, 2016^2 slices,
// cone beam, magnification 2), the backprojection of a vertical slice through the axis and of the
// axial slice at z = 0 from
//   R16F   full-height single-channel fp16 layers (the store before the mirrored pairs),
//   R32F   full-height fp32 layers,
//   RG16F  half-height mirrored layers: paired (one fetch per voxel pair), folded (one fetch per
//          voxel: the lower half fetched at the mirrored row, channel G), axial (channel R),
//   line   the axial slice from the average of the two centre rows, interpolated through L1,
// each variant's relative difference from R16F, and the three slices together (R16F one after
// another against paired vertical slices and the line, in turn and on three streams).
// Not built by CMake: nvcc -O3 -arch=sm_90 -std=c++17 mirror_texel_probe.cu; run on the GPU
// machine like any bundled binary (results: docs/performance.md, "Mirrored fp16 pairs").
#include <cuda_fp16.h>

#include <cmath>
#include <vector>

#include "tomobank_probe_scene.cuh"

enum Variant { kSingle, kPaired, kFolded };

template <Variant V, int P>
__global__ void bp(cudaTextureObject_t t, float* out, int n, int slice) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j0 = blockIdx.y * blockDim.y * P + threadIdx.y;
  const int height = V == kPaired ? n / 2 : n;  // paired: the upper half, each with its mirror
  if (i >= n || j0 >= height) return;
  float acc[P] = {}, mir[P] = {};
  const float fi = i, fj = j0, st = blockDim.y;
  for (int p = 0; p < kLayers; ++p) {
    const Map m = maps[slice][p];
    const float c0 = m.c[0] + fi * m.c[1] + fj * m.c[2], r0 = m.r[0] + fi * m.r[1] + fj * m.r[2];
    const float d0 = m.d[0] + fi * m.d[1] + fj * m.d[2];
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const float den = d0 + q * st * m.d[2];
      const float inv = __fdividef(1.0f, den);
      const float col = (c0 + q * st * m.c[2]) * inv + 0.5f;
      const float row = (r0 + q * st * m.r[2]) * inv + 0.5f;
      const float w = m.w * inv * inv;
      if constexpr (V == kSingle) {
        acc[q] += w * tex2DLayered<float>(t, col, row, p);
      } else if constexpr (V == kPaired) {
        const float2 v = tex2DLayered<float2>(t, col, row, p);
        acc[q] += w * v.x;
        mir[q] += w * v.y;
      } else {
        const bool lower = row > 0.5f * kRows;
        const float2 v = tex2DLayered<float2>(t, col, lower ? kRows - row : row, p);
        acc[q] += w * (lower ? v.y : v.x);
      }
    }
  }
#pragma unroll
  for (int q = 0; q < P; ++q) {
    const int j = j0 + q * blockDim.y;
    if (j >= height) continue;
    out[(size_t)j * n + i] = acc[q];
    if (V == kPaired) out[(size_t)(n - 1 - j) * n + i] = mir[q];
  }
}

// The axial slice in the source plane projects onto the line between the two central detector
// rows in every projection: a 1-D interpolation of their average, read through L1 (load/store
// pipe), not the texture unit. `lines` holds per layer kCols + 3 values: a zero, the average row,
// two zeros (so that clamped positions read zeros).
constexpr int kLine = kCols + 3;
template <int P>
__global__ void bp_line(const float* lines, float* out, int n, int slice) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j0 = blockIdx.y * blockDim.y * P + threadIdx.y;
  if (i >= n || j0 >= n) return;
  float acc[P] = {};
  const float fi = i, fj = j0, st = blockDim.y;
  for (int p = 0; p < kLayers; ++p) {
    const Map m = maps[slice][p];
    const float c0 = m.c[0] + fi * m.c[1] + fj * m.c[2];
    const float d0 = m.d[0] + fi * m.d[1] + fj * m.d[2];
    const float* line = lines + (size_t)p * kLine + 1;
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const float inv = __fdividef(1.0f, d0 + q * st * m.d[2]);
      const float col = fminf(fmaxf((c0 + q * st * m.c[2]) * inv, -1.0f), (float)kCols);
      const float x0 = floorf(col);
      const float* at = line + (int)x0;
      const float a = __ldg(at), b = __ldg(at + 1);
      acc[q] = fmaf(m.w * inv * inv, fmaf(col - x0, b - a, a), acc[q]);
    }
  }
#pragma unroll
  for (int q = 0; q < P; ++q) {
    const int j = j0 + q * blockDim.y;
    if (j < n) out[(size_t)j * n + i] = acc[q];
  }
}

// The window in three layouts: R16F, R32F (full height) and mirrored RG16F (half height + 1 row).
void make_textures(cudaTextureObject_t* t16, cudaTextureObject_t* t32, cudaTextureObject_t* t2,
                   float** lines) {
  std::vector<float> line_host((size_t)kLayers * kLine, 0.0f);
  const cudaArray_t a16 = layered_array(cudaCreateChannelDescHalf(), kRows, kLayers);
  const cudaArray_t a32 = layered_array(cudaCreateChannelDesc<float>(), kRows, kLayers);
  const cudaArray_t a2 = layered_array(cudaCreateChannelDescHalf2(), kHalfRows, kLayers);
  std::vector<float> f((size_t)kRows * kCols);
  std::vector<__half> h(f.size());
  std::vector<__half2> m((size_t)kHalfRows * kCols);
  for (int l = 0; l < kLayers; ++l) {
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c)
        f[(size_t)r * kCols + c] = pixel(l, r, c);
    for (size_t k = 0; k < f.size(); ++k)
      h[k] = __float2half(f[k]);
    for (int r = 0; r < kHalfRows; ++r)
      for (int c = 0; c < kCols; ++c)
        m[(size_t)r * kCols + c] =
            __floats2half2_rn(f[(size_t)r * kCols + c], f[(size_t)(kRows - 1 - r) * kCols + c]);
    for (int c = 0; c < kCols; ++c)
      line_host[(size_t)l * kLine + 1 + c] =
          0.5f * (f[(size_t)(kRows / 2 - 1) * kCols + c] + f[(size_t)(kRows / 2) * kCols + c]);
    upload(a16, h.data(), 2, kRows, l);
    upload(a32, f.data(), 4, kRows, l);
    upload(a2, m.data(), 4, kHalfRows, l);
  }
  CK(cudaMalloc(lines, line_host.size() * 4));
  CK(cudaMemcpy(*lines, line_host.data(), line_host.size() * 4, cudaMemcpyHostToDevice));
  *t16 = texture_of(a16);
  *t32 = texture_of(a32);
  *t2 = texture_of(a2);
}

dim3 grid_of(dim3 block, int height, int points) {
  return dim3((kSide + block.x - 1) / block.x,
              (height + block.y * points - 1) / (block.y * points));
}

template <Variant V, int P>
void launch_bp(cudaTextureObject_t t, float* out, dim3 block, int slice, cudaStream_t stream = 0) {
  bp<V, P><<<grid_of(block, V == kPaired ? kSide / 2 : kSide, P), block, 0, stream>>>(t, out, kSide,
                                                                                      slice);
}

template <int P>
void launch_line(const float* lines, float* out, dim3 block, int slice, cudaStream_t stream = 0) {
  bp_line<P><<<grid_of(block, kSide, P), block, 0, stream>>>(lines, out, kSide, slice);
}

template <Variant V, int P>
float time_bp(cudaTextureObject_t t, float* out, dim3 block, int slice) {
  return best_ms([&] { launch_bp<V, P>(t, out, block, slice); });
}

int main() {
  cudaDeviceProp pr;
  CK(cudaGetDeviceProperties(&pr, 0));
  std::printf("%s, %d SMs\n", pr.name, pr.multiProcessorCount);
  cudaTextureObject_t t16, t32, t2;
  float* lines;
  make_textures(&t16, &t32, &t2, &lines);
  for (int s = 0; s < 3; ++s)
    set_maps(s);
  const size_t n2 = (size_t)kSide * kSide;
  float* outs[3];
  for (float*& o : outs)
    CK(cudaMalloc(&o, n2 * 4));
  float* out = outs[0];
  std::vector<float> ref(n2), got(n2);
  auto fetch = [&](std::vector<float>& v, const float* from) {
    CK(cudaMemcpy(v.data(), from, n2 * 4, cudaMemcpyDeviceToHost));
  };
  const dim3 blocks[] = {dim3(32, 4), dim3(32, 8), dim3(64, 2)};
  const char* names[] = {"vertical x", "vertical y", "axial z=0"};
  for (int s = 0; s < 3; ++s) {
    for (const dim3 b : blocks) {
      const float ms16 = time_bp<kSingle, 8>(t16, out, b, s);
      fetch(ref, out);
      const float ms32 = time_bp<kSingle, 8>(t32, out, b, s);
      fetch(got, out);
      const double e32 = rel_diff(got, ref);
      const float msf = time_bp<kFolded, 8>(t2, out, b, s);
      fetch(got, out);
      const double ef = rel_diff(got, ref);
      // The new path of this slice: paired fetches (vertical) or the line through L1 (axial).
      const auto time_new = [&](bool eight) {
        if (s < 2) {
          return eight ? time_bp<kPaired, 8>(t2, out, b, s) : time_bp<kPaired, 4>(t2, out, b, s);
        }
        return best_ms([&] {
          if (eight) {
            launch_line<8>(lines, out, b, s);
          } else {
            launch_line<4>(lines, out, b, s);
          }
        });
      };
      const float ms4 = time_new(false);
      const float ms8 = time_new(true);
      fetch(got, out);
      const double en = rel_diff(got, ref);
      std::printf(
          "%-10s block %2dx%d: R16F %.3f ms | R32F %.3f (%.1e) | RG16F folded %.3f (%.1e) | "
          "%s 8pt %.3f 4pt %.3f (%.1e) | R16F/new %.2fx\n",
          names[s], b.x, b.y, ms16, ms32, e32, msf, ef, s < 2 ? "paired" : "line (L1)", ms8, ms4,
          en, ms16 / std::fmin(ms8, ms4));
    }
  }
  // The three slices together: today's (R16F, one after another) against the new (vertical
  // slices paired, axial from the line), one after another and on three streams at once.
  cudaStream_t st[3];
  for (cudaStream_t& x : st)
    CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  cudaEvent_t fork, join[3];
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  for (cudaEvent_t& e : join)
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const dim3 b(32, 8);
  const float today = best_ms([&] {
    for (int s = 0; s < 3; ++s)
      launch_bp<kSingle, 8>(t16, outs[s], b, s);
  });
  const float sequential = best_ms([&] {
    launch_bp<kPaired, 4>(t2, outs[0], b, 0);
    launch_bp<kPaired, 4>(t2, outs[1], b, 1);
    launch_line<8>(lines, outs[2], b, 2);
  });
  auto concurrent = [&](bool line_first) {
    return best_ms([&] {
      CK(cudaEventRecord(fork, 0));
      for (int k = 0; k < 3; ++k)
        CK(cudaStreamWaitEvent(st[k], fork));
      if (line_first) launch_line<8>(lines, outs[2], b, 2, st[2]);
      launch_bp<kPaired, 4>(t2, outs[0], b, 0, st[0]);
      launch_bp<kPaired, 4>(t2, outs[1], b, 1, st[1]);
      if (!line_first) launch_line<8>(lines, outs[2], b, 2, st[2]);
      for (int k = 0; k < 3; ++k) {
        CK(cudaEventRecord(join[k], st[k]));
        CK(cudaStreamWaitEvent(0, join[k]));
      }
    });
  };
  const float conc_line_first = concurrent(true);
  const float conc_line_last = concurrent(false);
  const float texture_axial_too = best_ms([&] {
    launch_bp<kPaired, 4>(t2, outs[0], b, 0);
    launch_bp<kPaired, 4>(t2, outs[1], b, 1);
    launch_bp<kSingle, 8>(t2, outs[2], b, 2);  // channel R of the mirrored layers
  });
  std::printf(
      "three slices, block 32x8: today (R16F) %.3f ms | paired + line, one after another %.3f | "
      "on three streams %.3f (line first) %.3f (line last) | paired + axial fetched from RG16F "
      "%.3f | today / best %.2fx\n",
      today, sequential, conc_line_first, conc_line_last, texture_axial_too,
      today / std::fmin(std::fmin(sequential, conc_line_first), conc_line_last));
  return 0;
}
