#include "texture_ceiling.hpp"

#include <algorithm>
#include <vector>

#include "bench/common/gpu_timer.hpp"
#include "bench_scene.hpp"
#include "kernels/cuda/backproject_kernel.cuh"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/projection_texture_store.hpp"

namespace slicestream::bench {
namespace {

constexpr int kSteps = 256;  // samples per thread
constexpr DetectorShape kShape{1024, 1024};
constexpr int kCols = 1024;  // kShape.cols, usable in device code
constexpr std::size_t kLayerPixels = std::size_t{1024} * 1024;
constexpr std::size_t kLayerQuads = std::size_t{1025} * 1025;
constexpr int kLayers = 64;

enum class Fetch { kLinear, kGather, kPoint, kL1Loads, kL1Quad };

// Thread (x, y) samples near (x * 0.93 + step * 0.41, y * 0.87 + step * 0.29) of layer step % 64,
// like a voxel tile walking over the projections of a window.
template <Fetch kFetch>
__global__ void ceiling_kernel(cudaTextureObject_t filtered, cudaTextureObject_t point,
                               const float* linear, const float4* quads, float* out) {
  const float x0 = static_cast<float>(blockIdx.x * blockDim.x + threadIdx.x) * 0.93f + 3.0f;
  const float y0 = static_cast<float>(blockIdx.y * blockDim.y + threadIdx.y) * 0.87f + 3.0f;
  float acc = 0.0f;
#pragma unroll 4
  for (int step = 0; step < kSteps; ++step) {
    const float x = fmodf(x0 + 0.41f * static_cast<float>(step), 1000.0f);
    const float y = fmodf(y0 + 0.29f * static_cast<float>(step), 1000.0f);
    const int layer = step & (kLayers - 1);
    if constexpr (kFetch == Fetch::kLinear) {
      acc += tex2DLayered<float>(filtered, x, y, layer);
    } else if constexpr (kFetch == Fetch::kGather) {
      const float4 g = cuda::detail::gather_layered(point, layer, x, y);
      acc += g.x + g.y + g.z + g.w;
    } else if constexpr (kFetch == Fetch::kPoint) {
      acc += tex2DLayered<float>(point, x, y, layer);
    } else if constexpr (kFetch == Fetch::kL1Quad) {
      const int ix = static_cast<int>(x);
      const int iy = static_cast<int>(y);
      const float4 q = __ldg(quads + static_cast<std::size_t>(layer) * kLayerQuads +
                             static_cast<std::size_t>(iy) * (kCols + 1) + ix);
      acc += q.x + q.y + q.z + q.w;
    } else {
      const int ix = static_cast<int>(x);
      const int iy = static_cast<int>(y);
      const float* p = linear + static_cast<std::size_t>(layer) * kLayerPixels +
                       static_cast<std::size_t>(iy) * kCols + ix;
      acc += __ldg(p) + __ldg(p + 1) + __ldg(p + kCols) + __ldg(p + kCols + 1);
    }
  }
  out[(blockIdx.y * blockDim.y + threadIdx.y) * gridDim.x * blockDim.x + blockIdx.x * blockDim.x +
      threadIdx.x] = acc;
}

template <Fetch kFetch>
double samples_per_second(const cuda::ProjectionTextureStore& store, float* out) {
  const cuda::TextureRef ref = store.slot_ref(0);  // slots are contiguous in the linear copies
  const dim3 block(32, 8);
  const dim3 grid(64, 128);  // 2M threads: fills the GPU many times over
  const double samples = static_cast<double>(grid.x * block.x) * grid.y * block.y * kSteps;
  const double ms = median_ms(
      [&](cudaStream_t stream) {
        ceiling_kernel<kFetch>
            <<<grid, block, 0, stream>>>(ref.filtered, ref.point, ref.linear, ref.quads, out);
        SLICESTREAM_CUDA_CHECK_LAUNCH("ceiling_kernel");
      },
      7, timing_stream());
  return samples / (ms * 1e-3);
}

}  // namespace

std::vector<CeilingResult> measure_ceilings() {
  cuda::ProjectionStoreOptions options;
  options.linear_copy = cuda::LinearCopy::kPlain;
  cuda::ProjectionTextureStore store(0, kShape, kLayers, options);
  options.linear_copy = cuda::LinearCopy::kQuads;
  cuda::ProjectionTextureStore quad_store(0, kShape, kLayers, options);
  cuda::DeviceBuffer<float> projection(kShape.pixels());
  for (int layer = 0; layer < kLayers; ++layer) {
    fill_smooth_random(projection.data(), kShape, 1000u + static_cast<unsigned>(layer), nullptr);
    store.write_slot(layer, projection.data(), nullptr);
    quad_store.write_slot(layer, projection.data(), nullptr);
  }
  cuda::DeviceBuffer<float> out(64 * 32 * 128 * 8);
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<CeilingResult> results;
  results.push_back({"texture bilinear fetch (hardware filtering)",
                     samples_per_second<Fetch::kLinear>(store, out.data()), "fetch/s"});
  if (store.gather_supported()) {
    results.push_back({"texture gather (tld4, 2x2 texels)",
                       samples_per_second<Fetch::kGather>(store, out.data()), "fetch/s"});
  }
  results.push_back(
      {"texture point fetch", samples_per_second<Fetch::kPoint>(store, out.data()), "fetch/s"});
  results.push_back({"four L1 loads (2x2 texels from linear memory)",
                     samples_per_second<Fetch::kL1Loads>(store, out.data()), "sample/s"});
  results.push_back({"one 16-byte L1 load (2x2 texels from the quad copy)",
                     samples_per_second<Fetch::kL1Quad>(quad_store, out.data()), "sample/s"});

  // Device-to-device copy: bytes read + written per second.
  const std::size_t bytes = std::size_t{1} << 30;
  cuda::DeviceBuffer<unsigned char> a(bytes);
  cuda::DeviceBuffer<unsigned char> b(bytes);
  SLICESTREAM_CUDA_CHECK(cudaMemset(a.data(), 1, bytes));
  const double ms = median_ms(
      [&](cudaStream_t stream) {
        SLICESTREAM_CUDA_CHECK(
            cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, stream));
      },
      7, timing_stream());
  results.push_back({"device-to-device copy (read + write)", 2.0 * bytes / (ms * 1e-3), "B/s"});
  return results;
}

}  // namespace slicestream::bench
