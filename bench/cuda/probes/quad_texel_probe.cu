// Probe: can one texture fetch serve four voxels? The store's mirrored pairs (RG16F texels holding
// a row and its mirror row) give two values per fetch for vertical slices through the source
// plane. In a window of N projections over 180 degrees with equal steps, slots p and p + N/2 lie
// 90 degrees apart, and a point q at angle a + 90 projects where its rotation R^-1 q (by -90
// degrees about the axis) projects at angle a, with the same depth, so the same weight. So texels
// holding (P_p[r], P_p[mirror r], P_{p+N/2}[r], P_{p+N/2}[mirror r]) (RGBA16F, N/2 layers of
// half height: the same bytes as the pairs) give, fetched where q projects at slot p, slot p's
// values for q and its mirror and slot p + N/2's for R q and its mirror. A thread that takes the
// orbit of a point under R (four points: s0(i), s1(i), s0(n-1-i), s1(n-1-i) for the two vertical
// slices through the axis, each with its mirror row; (x, y), (-y, x), (-x, -y), (y, -x) for the
// axial slice) fetches four times per slot pair and uses every channel: four samples per fetch
// for the vertical slices (two with the pairs), two for the axial one (one with the pairs).
//
// The open question is the texture unit's rate for 8-byte texels: at the 4-byte texels' rate the
// three slices take about half the time; at half that rate nothing is gained.
//
// Measures, on Tomobank's shapes (300 projections over 180 degrees of 2016 rows x 1800 columns,
// 2016^2 slices, cone beam, magnification 2):
//   pairs  the store's default: each vertical slice from the RG16F pairs (one fetch per pair),
//          the axial slice from their channel R (one fetch per point);
//   quads  both vertical slices in one kernel from the RGBA16F quads, the axial slice likewise;
// each result's relative difference from full-height R16F layers (one fetch per sample).
// Not built by CMake: nvcc -O3 -arch=sm_90 -std=c++17 quad_texel_probe.cu; run on the GPU machine
// like any bundled binary (results: docs/performance.md, "Quad texels").
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "tomobank_probe_scene.cuh"

constexpr int kQuadLayers = kLayers / 2;

struct Sample {
  float col, row, w;
};

__device__ Sample sample_at(const Map& m, float i, float j) {
  const float inv = __fdividef(1.0f, m.d[0] + i * m.d[1] + j * m.d[2]);
  return {(m.c[0] + i * m.c[1] + j * m.c[2]) * inv + 0.5f,
          (m.r[0] + i * m.r[1] + j * m.r[2]) * inv + 0.5f, m.w * inv * inv};
}

// One slice, one fetch per sample (R16F reference) or per pair (RG16F: channel x only for the
// axial slice, both channels for a vertical slice's upper half and its mirror).
template <bool kPaired, int P>
__global__ void bp(cudaTextureObject_t t, float* out, int n, int slice) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j0 = blockIdx.y * blockDim.y * P + threadIdx.y;
  const int height = kPaired ? n / 2 : n;
  if (i >= n || j0 >= height) return;
  float acc[P] = {}, mir[P] = {};
  for (int p = 0; p < kLayers; ++p) {
    const Map m = maps[slice][p];
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const Sample s = sample_at(m, i, j0 + q * blockDim.y);
      if constexpr (kPaired) {
        const float2 v = tex2DLayered<float2>(t, s.col, s.row, p);
        acc[q] += s.w * v.x;
        mir[q] += s.w * v.y;
      } else {
        acc[q] += s.w * tex2DLayered<float>(t, s.col, s.row, p);
      }
    }
  }
#pragma unroll
  for (int q = 0; q < P; ++q) {
    const int j = j0 + q * blockDim.y;
    if (j >= height) continue;
    out[(size_t)j * n + i] = acc[q];
    if (kPaired) out[(size_t)(n - 1 - j) * n + i] = mir[q];
  }
}

// Both vertical slices from the quads: orbit point k of column i is slice k % 2 at column i
// (k < 2) or n - 1 - i (k >= 2); rotating point k by 90 degrees gives point k + 1 (mod 4).
template <int P>
__global__ void bp_quad_vertical(cudaTextureObject_t t, float* out0, float* out1, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j0 = blockIdx.y * blockDim.y * P + threadIdx.y;
  if (i >= n / 2 || j0 >= n / 2) return;
  float acc[4][P] = {}, mir[4][P] = {};
  const float column[4] = {float(i), float(i), float(n - 1 - i), float(n - 1 - i)};
  for (int p = 0; p < kQuadLayers; ++p) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const Map m = maps[k & 1][p];
#pragma unroll
      for (int q = 0; q < P; ++q) {
        const Sample s = sample_at(m, column[k], j0 + q * blockDim.y);
        const float4 v = tex2DLayered<float4>(t, s.col, s.row, p);
        acc[k][q] += s.w * v.x;
        mir[k][q] += s.w * v.y;
        acc[(k + 1) & 3][q] += s.w * v.z;
        mir[(k + 1) & 3][q] += s.w * v.w;
      }
    }
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float* out = (k & 1) ? out1 : out0;
    const int c = k < 2 ? i : n - 1 - i;
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const int j = j0 + q * blockDim.y;
      if (j >= n / 2) continue;
      out[(size_t)j * n + c] = acc[k][q];
      out[(size_t)(n - 1 - j) * n + c] = mir[k][q];
    }
  }
}

// The axial slice from the quads: the orbit of (i, j) is (i, j), (n-1-j, i), (n-1-i, n-1-j),
// (j, n-1-i); its points project onto the centre line, where both row channels are equal.
template <int P>
__global__ void bp_quad_axial(cudaTextureObject_t t, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j0 = blockIdx.y * blockDim.y * P + threadIdx.y;
  if (i >= n / 2 || j0 >= n / 2) return;
  float acc[4][P] = {};
  for (int p = 0; p < kQuadLayers; ++p) {
    const Map m = maps[2][p];
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const int j = j0 + q * blockDim.y;
      const float x[4] = {float(i), float(n - 1 - j), float(n - 1 - i), float(j)};
      const float y[4] = {float(j), float(i), float(n - 1 - j), float(n - 1 - i)};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const Sample s = sample_at(m, x[k], y[k]);
        const float4 v = tex2DLayered<float4>(t, s.col, s.row, p);
        acc[k][q] += s.w * v.x;
        acc[(k + 1) & 3][q] += s.w * v.z;
      }
    }
  }
#pragma unroll
  for (int q = 0; q < P; ++q) {
    const int j = j0 + q * blockDim.y;
    if (j >= n / 2) continue;
    const int x[4] = {i, n - 1 - j, n - 1 - i, j};
    const int y[4] = {j, i, n - 1 - j, n - 1 - i};
#pragma unroll
    for (int k = 0; k < 4; ++k)
      out[(size_t)y[k] * n + x[k]] = acc[k][q];
  }
}

// Every layer in fp16, computed on all cores.
std::vector<__half> window_in_half() {
  const size_t layer = (size_t)kRows * kCols;
  std::vector<__half> h(layer * kLayers);
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      for (int l = (int)w; l < kLayers; l += (int)workers)
        for (int r = 0; r < kRows; ++r)
          for (int c = 0; c < kCols; ++c)
            h[l * layer + (size_t)r * kCols + c] = __float2half(pixel(l, r, c));
    });
  }
  for (std::thread& t : threads)
    t.join();
  return h;
}

// The window as R16F (full height), RG16F pairs and RGBA16F quads (half height + 1 row).
void make_textures(cudaTextureObject_t* t16, cudaTextureObject_t* pairs,
                   cudaTextureObject_t* quads) {
  const std::vector<__half> h = window_in_half();
  const size_t layer = (size_t)kRows * kCols;
  const auto at = [&](int l, int r, int c) { return h[l * layer + (size_t)r * kCols + c]; };
  const cudaArray_t a16 = layered_array(cudaCreateChannelDescHalf(), kRows, kLayers);
  const cudaArray_t a2 = layered_array(cudaCreateChannelDescHalf2(), kHalfRows, kLayers);
  const cudaArray_t a4 = layered_array(cudaCreateChannelDescHalf4(), kHalfRows, kQuadLayers);
  std::vector<__half2> m((size_t)kHalfRows * kCols);
  std::vector<ushort4> q((size_t)kHalfRows * kCols);
  const auto bits = [](__half v) { return __half_as_ushort(v); };
  for (int l = 0; l < kLayers; ++l) {
    upload(a16, h.data() + l * layer, 2, kRows, l);
    for (int r = 0; r < kHalfRows; ++r)
      for (int c = 0; c < kCols; ++c)
        m[(size_t)r * kCols + c] = __halves2half2(at(l, r, c), at(l, kRows - 1 - r, c));
    upload(a2, m.data(), 4, kHalfRows, l);
    if (l >= kQuadLayers) continue;
    const int o = l + kQuadLayers;
    for (int r = 0; r < kHalfRows; ++r)
      for (int c = 0; c < kCols; ++c)
        q[(size_t)r * kCols + c] = make_ushort4(bits(at(l, r, c)), bits(at(l, kRows - 1 - r, c)),
                                                bits(at(o, r, c)), bits(at(o, kRows - 1 - r, c)));
    upload(a4, q.data(), 8, kHalfRows, l);
  }
  *t16 = texture_of(a16);
  *pairs = texture_of(a2);
  *quads = texture_of(a4);
}

dim3 grid_of(dim3 block, int width, int height, int points) {
  return dim3((width + block.x - 1) / block.x,
              (height + block.y * points - 1) / (block.y * points));
}

int main() {
  cudaDeviceProp pr;
  CK(cudaGetDeviceProperties(&pr, 0));
  std::printf("%s, %d SMs\n", pr.name, pr.multiProcessorCount);
  cudaTextureObject_t t16, pairs, quads;
  make_textures(&t16, &pairs, &quads);
  for (int s = 0; s < 3; ++s)
    set_maps(s);
  const int n = kSide;
  const size_t n2 = (size_t)n * n;
  float* outs[3];
  for (float*& o : outs)
    CK(cudaMalloc(&o, n2 * 4));
  std::vector<float> ref[3], got(n2);
  const auto fetch = [&](std::vector<float>& v, const float* from) {
    v.resize(n2);
    CK(cudaMemcpy(v.data(), from, n2 * 4, cudaMemcpyDeviceToHost));
  };
  const char* names[] = {"vertical x", "vertical y", "axial z=0"};
  const dim3 b(32, 8);
  // References: one fetch per sample from full-height R16F.
  for (int s = 0; s < 3; ++s) {
    CK(cudaMemset(outs[s], 0, n2 * 4));
    bp<false, 8><<<grid_of(b, n, n, 8), b>>>(t16, outs[s], n, s);
    CK(cudaGetLastError());
    fetch(ref[s], outs[s]);
  }
  const auto pairs_slice = [&](int s, cudaStream_t stream = 0) {
    if (s < 2) {
      bp<true, 4><<<grid_of(b, n, n / 2, 4), b, 0, stream>>>(pairs, outs[s], n, s);
    } else {
      bp<false, 8><<<grid_of(b, n, n, 8), b, 0, stream>>>(pairs, outs[s], n, s);
    }
  };
  const auto check = [&](const char* what, int s) {
    fetch(got, outs[s]);
    std::printf("  %-34s %-10s rel. diff from R16F %.2e\n", what, names[s], rel_diff(got, ref[s]));
  };
  for (int s = 0; s < 3; ++s) {
    CK(cudaMemset(outs[s], 0, n2 * 4));
    pairs_slice(s);
    check("pairs", s);
  }
  const float pairs_each[3] = {best_ms([&] { pairs_slice(0); }), best_ms([&] { pairs_slice(1); }),
                               best_ms([&] { pairs_slice(2); })};
  const float pairs_all = best_ms([&] {
    for (int s = 0; s < 3; ++s)
      pairs_slice(s);
  });
  std::printf("pairs: vertical x %.3f ms, vertical y %.3f, axial %.3f; the three %.3f ms\n",
              pairs_each[0], pairs_each[1], pairs_each[2], pairs_all);

  // Quads: every variant checked against the references, then timed.
  const dim3 blocks[] = {dim3(32, 4), dim3(32, 8), dim3(16, 8)};
  for (const dim3 qb : blocks) {
    for (int points : {1, 2, 4}) {
      const auto vertical = [&] {
        const dim3 g = grid_of(qb, n / 2, n / 2, points);
        if (points == 1) bp_quad_vertical<1><<<g, qb>>>(quads, outs[0], outs[1], n);
        if (points == 2) bp_quad_vertical<2><<<g, qb>>>(quads, outs[0], outs[1], n);
        if (points == 4) bp_quad_vertical<4><<<g, qb>>>(quads, outs[0], outs[1], n);
      };
      const auto axial = [&] {
        const dim3 g = grid_of(qb, n / 2, n / 2, points);
        if (points == 1) bp_quad_axial<1><<<g, qb>>>(quads, outs[2], n);
        if (points == 2) bp_quad_axial<2><<<g, qb>>>(quads, outs[2], n);
        if (points == 4) bp_quad_axial<4><<<g, qb>>>(quads, outs[2], n);
      };
      for (float* o : outs)
        CK(cudaMemset(o, 0, n2 * 4));
      vertical();
      axial();
      CK(cudaGetLastError());
      char what[64];
      std::snprintf(what, sizeof what, "quads block %ux%u, %d point(s)", qb.x, qb.y, points);
      for (int s = 0; s < 3; ++s)
        check(what, s);
      const float v = best_ms(vertical), a = best_ms(axial);
      const float all = best_ms([&] {
        vertical();
        axial();
      });
      std::printf(
          "%s: both vertical %.3f ms (pairs %.3f: %.2fx), axial %.3f (pairs %.3f: %.2fx); the "
          "three %.3f ms (pairs %.3f: %.2fx)\n",
          what, v, pairs_each[0] + pairs_each[1], (pairs_each[0] + pairs_each[1]) / v, a,
          pairs_each[2], pairs_each[2] / a, all, pairs_all, pairs_all / all);
    }
  }
  return 0;
}
