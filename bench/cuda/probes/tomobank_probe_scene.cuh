// What the standalone texture probes share: Tomobank's shapes (300 projections over 180 degrees of
// 2016 rows x 1800 columns, 2016^2 slices, cone beam, magnification 2), the three default slices'
// detector maps in constant memory, a smooth random window, layered-texture helpers and timing.
// Included by one probe per program (it defines the constant-memory maps).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_check.cuh"

constexpr int kRows = 2016, kCols = 1800, kLayers = 300, kSide = 2016;
constexpr int kHalfRows = kRows / 2 + 1;

// col = (c0 + i c1 + j c2) / den, row likewise, den = d0 + i d1 + j d2 (pixel-centre coordinates).
struct Map {
  float c[3], r[3], d[3], w;
};
__constant__ Map maps[3][kLayers];  // per slice: vertical x, vertical y, axial

// Smooth random projection with noise, never zero.
float pixel(int p, int r, int c) {
  return 0.3f + 0.5f * std::cos(0.013f * c + 0.021f * r + p) +
         0.5f * std::cos(-0.017f * c + 0.009f * r + 2.0f * p) +
         0.05f *
             (((((unsigned)r * 7919u + (unsigned)c * 104729u + (unsigned)p * 15485863u) & 0xffffu) /
               65535.0f) -
              0.5f);
}

// A layered array of kCols x rows texels per layer.
cudaArray_t layered_array(cudaChannelFormatDesc format, int rows, int layers) {
  cudaArray_t array;
  CK(cudaMalloc3DArray(&array, &format, make_cudaExtent(kCols, rows, layers), cudaArrayLayered));
  return array;
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

// Cone beam, source and detector 3 n from the axis, 2 mm pixels, 1 mm voxels, 300 angles over
// 180 degrees. Slice point (i, j): vertical (slice 0: along x, 1: along y) or axial at z = 0.
void set_maps(int slice) {
  std::vector<Map> h(kLayers);
  const double sod = 3.0 * kSide, sdd = 6.0 * kSide, pix = 2.0, half = 0.5 * kSide - 0.5;
  for (int p = 0; p < kLayers; ++p) {
    const double a = M_PI * p / kLayers, ca = std::cos(a), sa = std::sin(a);
    // point = o + i ei + j ej; u = x ca + y sa, depth = x sa - y ca, z.
    double o[3], ei[3], ej[3];
    if (slice == 2) {
      const double oo[3] = {-half, -half, 0}, e1[3] = {1, 0, 0}, e2[3] = {0, 1, 0};
      for (int k = 0; k < 3; ++k)
        o[k] = oo[k], ei[k] = e1[k], ej[k] = e2[k];
    } else {
      const double oo[3] = {slice == 0 ? -half : 0, slice == 1 ? -half : 0, -half};
      const double e1[3] = {slice == 0 ? 1.0 : 0, slice == 1 ? 1.0 : 0, 0}, e2[3] = {0, 0, 1};
      for (int k = 0; k < 3; ++k)
        o[k] = oo[k], ei[k] = e1[k], ej[k] = e2[k];
    }
    auto U = [&](const double* v) { return v[0] * ca + v[1] * sa; };
    auto D = [&](const double* v) { return v[0] * sa - v[1] * ca; };
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
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best = 1e9f;
  for (int r = 0; r < 12; ++r) {
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r > 1 && ms < best) best = ms;
  }
  CK(cudaGetLastError());
  return best;
}

double rel_diff(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    num += (double(a[k]) - ref[k]) * (double(a[k]) - ref[k]);
    den += double(ref[k]) * ref[k];
  }
  return std::sqrt(num / den);
}
