// Probe: can a slot replacement write only its half of an 8-byte texel? Quad texels (RGBA16F
// holding slot p's pair in RG and slot p + N/2's in BA; "Quad texels" in docs/performance.md)
// are replaced one slot at a time, about N/2 frames apart, so a replacement must leave the
// partner's half as it is. Reading and rewriting whole texels costs the partner's bytes both
// ways. An unformatted surface store (sust.b) takes its x coordinate in bytes and moves as many
// bytes as its operand holds, so a 4-byte store at byte 8 x or 8 x + 4 would write one half.
//
// Checks, on a layered RGBA16F array of Tomobank's half-height quads (1800 x 1009 texels):
//   1. every texel filled whole, then the upper halves of every texel rewritten with 4-byte stores:
//      copied back, the lower halves are untouched and the upper ones hold the new values; the
//      texture unit's filtered fetch of a texel returns the four channels written;
//   2. the same for the lower halves;
// and times per layer (median of 20 passes over 64 layers, values computed in registers):
//   full     8-byte stores of whole texels;
//   half     4-byte stores of one half of every texel;
//   rmw      each texel read (4-byte surface load of the partner's half) and rewritten whole;
//   pairs    4-byte stores of whole RG16F texels (the store's mirrored pairs today).
// Not built by CMake: nvcc -O3 -arch=sm_90 -std=c++17 half_texel_write_probe.cu
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "probe_check.cuh"

constexpr int kCols = 1800, kRows = 1009, kLayers = 64;

__host__ __device__ unsigned pattern(int x, int y, int layer, unsigned salt) {
  unsigned h = static_cast<unsigned>(x) * 73856093u ^ static_cast<unsigned>(y) * 19349663u ^
               static_cast<unsigned>(layer) * 83492791u ^ salt;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  // Two halves in [0.5, 1.5) as fp16 bits: finite, never zero.
  const unsigned a = 0x3800u + (h & 0x3ffu);
  const unsigned b = 0x3800u + ((h >> 10) & 0x3ffu);
  return a | (b << 16);
}

__global__ void write_full(cudaSurfaceObject_t surf, unsigned salt_lo, unsigned salt_hi) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  const int layer = blockIdx.z;
  if (x >= kCols) return;
  const uint2 v = make_uint2(pattern(x, y, layer, salt_lo), pattern(x, y, layer, salt_hi));
  surf2DLayeredwrite(v, surf, x * 8, y, layer);
}

__global__ void write_half(cudaSurfaceObject_t surf, int half, unsigned salt) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  const int layer = blockIdx.z;
  if (x >= kCols) return;
  surf2DLayeredwrite(pattern(x, y, layer, salt), surf, x * 8 + 4 * half, y, layer);
}

__global__ void read_modify_write(cudaSurfaceObject_t surf, int half, unsigned salt) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  const int layer = blockIdx.z;
  if (x >= kCols) return;
  const unsigned partner = surf2DLayeredread<unsigned>(surf, x * 8 + 4 * (1 - half), y, layer);
  const unsigned mine = pattern(x, y, layer, salt);
  const uint2 v = half == 0 ? make_uint2(mine, partner) : make_uint2(partner, mine);
  surf2DLayeredwrite(v, surf, x * 8, y, layer);
}

__global__ void write_pairs(cudaSurfaceObject_t surf, unsigned salt) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  const int layer = blockIdx.z;
  if (x >= kCols) return;
  surf2DLayeredwrite(pattern(x, y, layer, salt), surf, x * 4, y, layer);
}

// Filtered fetches at texel centres: must return the texel's four channels.
__global__ void fetch_centres(cudaTextureObject_t tex, float4* out, int layer, int count) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  const int x = (k * 7919) % kCols;
  const int y = (k * 104729) % kRows;
  out[k] = tex2DLayered<float4>(tex, x + 0.5f, y + 0.5f, layer);
}

struct Layered {
  cudaArray_t array = nullptr;
  cudaSurfaceObject_t surf = 0;
  cudaTextureObject_t tex = 0;
};

Layered make_layered(cudaChannelFormatDesc format) {
  Layered l;
  CK(cudaMalloc3DArray(&l.array, &format, make_cudaExtent(kCols, kRows, kLayers),
                       cudaArrayLayered | cudaArraySurfaceLoadStore));
  cudaResourceDesc rd = {};
  rd.resType = cudaResourceTypeArray;
  rd.res.array.array = l.array;
  CK(cudaCreateSurfaceObject(&l.surf, &rd));
  cudaTextureDesc td = {};
  td.addressMode[0] = td.addressMode[1] = cudaAddressModeBorder;
  td.filterMode = cudaFilterModeLinear;
  td.readMode = cudaReadModeElementType;
  CK(cudaCreateTextureObject(&l.tex, &rd, &td, nullptr));
  return l;
}

std::vector<unsigned> copy_back(const Layered& l, std::size_t words_per_texel) {
  std::vector<unsigned> host(static_cast<std::size_t>(kCols) * kRows * kLayers * words_per_texel);
  cudaMemcpy3DParms p = {};
  p.srcArray = l.array;
  p.dstPtr = make_cudaPitchedPtr(host.data(), kCols * words_per_texel * 4, kCols, kRows);
  p.extent = make_cudaExtent(kCols, kRows, kLayers);
  p.kind = cudaMemcpyDeviceToHost;
  CK(cudaMemcpy3D(&p));
  return host;
}

float half_bits_to_float(unsigned bits) {
  __half_raw raw;
  raw.x = static_cast<unsigned short>(bits);
  return __half2float(__half(raw));
}

// Check 1 / 2: fill whole with salts (1, 2), rewrite `half` with salt 3.
bool check_half_write(const Layered& quads, int half) {
  const dim3 block(256), grid((kCols + 255) / 256, kRows, kLayers);
  write_full<<<grid, block>>>(quads.surf, 1u, 2u);
  write_half<<<grid, block>>>(quads.surf, half, 3u);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  const std::vector<unsigned> host = copy_back(quads, 2);
  std::size_t wrong = 0;
  for (int layer = 0; layer < kLayers; ++layer) {
    for (int y = 0; y < kRows; ++y) {
      for (int x = 0; x < kCols; ++x) {
        const std::size_t t = ((static_cast<std::size_t>(layer) * kRows + y) * kCols + x) * 2;
        const unsigned lo = half == 0 ? pattern(x, y, layer, 3u) : pattern(x, y, layer, 1u);
        const unsigned hi = half == 1 ? pattern(x, y, layer, 3u) : pattern(x, y, layer, 2u);
        if (host[t] != lo || host[t + 1] != hi) ++wrong;
      }
    }
  }
  // Filtered fetches at texel centres of the last layer.
  constexpr int kFetches = 4096;
  float4* fetched = nullptr;
  CK(cudaMalloc(&fetched, kFetches * sizeof(float4)));
  fetch_centres<<<kFetches / 256, 256>>>(quads.tex, fetched, kLayers - 1, kFetches);
  CK(cudaGetLastError());
  std::vector<float4> got(kFetches);
  CK(cudaMemcpy(got.data(), fetched, kFetches * sizeof(float4), cudaMemcpyDeviceToHost));
  CK(cudaFree(fetched));
  std::size_t fetch_wrong = 0;
  for (int k = 0; k < kFetches; ++k) {
    const int x = (k * 7919) % kCols;
    const int y = (k * 104729) % kRows;
    const unsigned lo = half == 0 ? pattern(x, y, kLayers - 1, 3u) : pattern(x, y, kLayers - 1, 1u);
    const unsigned hi = half == 1 ? pattern(x, y, kLayers - 1, 3u) : pattern(x, y, kLayers - 1, 2u);
    const float want[4] = {half_bits_to_float(lo & 0xffffu), half_bits_to_float(lo >> 16),
                           half_bits_to_float(hi & 0xffffu), half_bits_to_float(hi >> 16)};
    const float have[4] = {got[k].x, got[k].y, got[k].z, got[k].w};
    for (int c = 0; c < 4; ++c) {
      if (std::abs(have[c] - want[c]) > 1e-6f * std::abs(want[c])) {
        ++fetch_wrong;
        break;
      }
    }
  }
  std::printf(
      "half %d written by 4-byte stores: %zu of %d texels wrong in the copy, %zu of %d "
      "filtered fetches wrong\n",
      half, wrong, kCols * kRows * kLayers, fetch_wrong, kFetches);
  return wrong == 0 && fetch_wrong == 0;
}

template <class Launch>
float median_ms_per_layer(Launch&& launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  launch();  // warm-up
  std::vector<float> ms;
  for (int r = 0; r < 20; ++r) {
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float t = 0;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t / kLayers);
  }
  CK(cudaGetLastError());
  std::nth_element(ms.begin(), ms.begin() + 10, ms.end());
  return ms[10];
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);
  const Layered quads =
      make_layered(cudaCreateChannelDesc(16, 16, 16, 16, cudaChannelFormatKindFloat));
  const Layered pairs =
      make_layered(cudaCreateChannelDesc(16, 16, 0, 0, cudaChannelFormatKindFloat));
  const bool ok = check_half_write(quads, 1) && check_half_write(quads, 0);
  const dim3 block(256), grid((kCols + 255) / 256, kRows, kLayers);
  const double quad_mb = kCols * static_cast<double>(kRows) * 8 / 1e6;
  const float full = median_ms_per_layer([&] { write_full<<<grid, block>>>(quads.surf, 5u, 6u); });
  const float half = median_ms_per_layer([&] { write_half<<<grid, block>>>(quads.surf, 1, 7u); });
  const float rmw =
      median_ms_per_layer([&] { read_modify_write<<<grid, block>>>(quads.surf, 1, 8u); });
  const float pair = median_ms_per_layer([&] { write_pairs<<<grid, block>>>(pairs.surf, 9u); });
  std::printf(
      "per layer of %d x %d texels (quad layer %.1f MB), us: full %.2f, half %.2f, "
      "read-modify-write %.2f, pairs (RG16F) %.2f\n",
      kCols, kRows, quad_mb, 1e3 * full, 1e3 * half, 1e3 * rmw, 1e3 * pair);
  std::printf("%s\n", ok ? "half-texel stores: correct" : "half-texel stores: WRONG");
  return ok ? 0 : 1;
}
