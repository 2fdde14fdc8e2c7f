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
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t err_ = (x);                                                    \
    if (err_ != cudaSuccess) {                                                 \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

constexpr int kRows = 2016, kCols = 1800, kLayers = 300, kSide = 2016;
constexpr int kHalfRows = kRows / 2 + 1;

// col = (c0 + i c1 + j c2) / den, row likewise, den = d0 + i d1 + j d2 (pixel-centre coordinates).
struct Map {
  float c[3], r[3], d[3], w;
};
__constant__ Map maps[3][kLayers];  // per slice: vertical x, vertical y, axial

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

// Smooth random projection with noise, never zero.
float pixel(int p, int r, int c) {
  return 0.3f + 0.5f * std::cos(0.013f * c + 0.021f * r + p) +
         0.5f * std::cos(-0.017f * c + 0.009f * r + 2.0f * p) +
         0.05f *
             (((((unsigned)r * 7919u + (unsigned)c * 104729u + (unsigned)p * 15485863u) & 0xffffu) /
               65535.0f) -
              0.5f);
}

cudaTextureObject_t texture_of(cudaArray_t arr) {
  cudaResourceDesc rd = {};
  rd.resType = cudaResourceTypeArray;
  rd.res.array.array = arr;
  cudaTextureDesc td = {};
  td.addressMode[0] = td.addressMode[1] = cudaAddressModeBorder;
  td.filterMode = cudaFilterModeLinear;
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t t;
  CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
  return t;
}

void upload(cudaArray_t arr, const void* host, size_t element, int rows, int layer) {
  cudaMemcpy3DParms cp = {};
  cp.srcPtr = make_cudaPitchedPtr(const_cast<void*>(host), kCols * element, kCols, rows);
  cp.dstArray = arr;
  cp.dstPos = make_cudaPos(0, 0, layer);
  cp.extent = make_cudaExtent(kCols, rows, 1);
  cp.kind = cudaMemcpyHostToDevice;
  const cudaError_t e = cudaMemcpy3D(&cp);
  if (e != cudaSuccess) {
    cudaChannelFormatDesc d;
    cudaExtent x;
    unsigned flags;
    cudaArrayGetInfo(&d, &x, &flags, arr);
    std::printf("upload element %zu rows %d layer %d into %zux%zux%zu (%d %d %d %d) flags %u: %s\n",
                element, rows, layer, x.width, x.height, x.depth, d.x, d.y, d.z, d.w, flags,
                cudaGetErrorString(e));
    std::exit(1);
  }
}

// The window in three layouts: R16F, R32F (full height) and mirrored RG16F (half height + 1 row).
void make_textures(cudaTextureObject_t* t16, cudaTextureObject_t* t32, cudaTextureObject_t* t2,
                   float** lines) {
  std::vector<float> line_host((size_t)kLayers * kLine, 0.0f);
  const cudaChannelFormatDesc d16 = cudaCreateChannelDescHalf(),
                              d32 = cudaCreateChannelDesc<float>(),
                              d2 = cudaCreateChannelDescHalf2();
  cudaArray_t a16, a32, a2;
  CK(cudaMalloc3DArray(&a16, &d16, make_cudaExtent(kCols, kRows, kLayers), cudaArrayLayered));
  CK(cudaMalloc3DArray(&a32, &d32, make_cudaExtent(kCols, kRows, kLayers), cudaArrayLayered));
  CK(cudaMalloc3DArray(&a2, &d2, make_cudaExtent(kCols, kHalfRows, kLayers), cudaArrayLayered));
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

// Cone beam, source and detector 3 n from the axis, 2 mm pixels, 1 mm voxels. Slice point
// (i, j): vertical (axis a = 0: x, a = 1: y) or axial at z = 0.
void set_maps(int slice) {  // slice 0, 1: vertical through the axis along x, y; 2: axial
  std::vector<Map> h(kLayers);
  const double sod = 3.0 * kSide, sdd = 6.0 * kSide, pix = 2.0, half = 0.5 * kSide - 0.5;
  for (int p = 0; p < kLayers; ++p) {
    const double a = M_PI * p / kLayers, ca = std::cos(a), sa = std::sin(a);
    // point = o + i ei + j ej; u = x ca + y sa, depth = x sa - y ca, z.
    double o[3], ei[3], ej[3];
    if (slice == 2) {  // axial
      double oo[3] = {-half, -half, 0}, e1[3] = {1, 0, 0}, e2[3] = {0, 1, 0};
      for (int k = 0; k < 3; ++k)
        o[k] = oo[k], ei[k] = e1[k], ej[k] = e2[k];
    } else {
      double oo[3] = {slice == 0 ? -half : 0, slice == 1 ? -half : 0, -half};
      double e1[3] = {slice == 0 ? 1.0 : 0, slice == 1 ? 1.0 : 0, 0}, e2[3] = {0, 0, 1};
      for (int k = 0; k < 3; ++k)
        o[k] = oo[k], ei[k] = e1[k], ej[k] = e2[k];
    }
    auto U = [&](const double* v) { return v[0] * ca + v[1] * sa; };
    auto D = [&](const double* v) { return v[0] * sa - v[1] * ca; };
    // den = (sod + depth) / sdd ; col = u / pix / den + cols/2 - 0.5 ; row = z / pix / den + rows/2
    // - 0.5
    Map& m = h[p];
    const double dn[3] = {(sod + D(o)) / sdd, D(ei) / sdd, D(ej) / sdd};
    const double cc = 0.5 * kCols - 0.5, rc = 0.5 * kRows - 0.5;
    const double un[3] = {U(o) / pix, U(ei) / pix, U(ej) / pix};
    const double zn[3] = {o[2] / pix, ei[2] / pix, ej[2] / pix};
    for (int k = 0; k < 3; ++k) {
      m.d[k] = dn[k];
      m.c[k] = un[k] + cc * dn[k];
      m.r[k] = zn[k] + rc * dn[k];
    }
    m.w = 1.0f / kLayers;
  }
  CK(cudaMemcpyToSymbol(maps, h.data(), sizeof(Map) * kLayers, sizeof(Map) * kLayers * slice));
}

template <typename Launch>
float best_ms(Launch launch) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  float best = 1e9f;
  for (int r = 0; r < 12; ++r) {
    cudaEventRecord(e0);
    launch();
    cudaEventRecord(e1);
    CK(cudaEventSynchronize(e1));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r > 1 && ms < best) best = ms;
  }
  CK(cudaGetLastError());
  return best;
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

double rel_diff(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    num += (double(a[k]) - ref[k]) * (double(a[k]) - ref[k]);
    den += double(ref[k]) * ref[k];
  }
  return std::sqrt(num / den);
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
