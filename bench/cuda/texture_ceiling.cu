#include "texture_ceiling.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "bench/common/gpu_timer.hpp"
#include "bench_scene.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/projection_texture_store.hpp"

namespace slicestream::bench {
namespace {

constexpr int kSteps = 256;  // samples per thread
constexpr DetectorShape kShape{1024, 1024};
constexpr int kCols = 1024;  // kShape.cols, usable in device code
constexpr std::size_t kLayerPixels = std::size_t{1024} * 1024;
constexpr int kLayers = 64;

enum class Fetch { kFiltered, kL1Loads };

// Thread (x, y) samples near (x * 0.93 + step * 0.41, y * 0.87 + step * 0.29) of layer step % 64,
// like a voxel tile walking over the projections of a window.
template <Fetch kFetch>
__global__ void ceiling_kernel(cudaTextureObject_t filtered, const float* linear, float* out) {
  const float x0 = static_cast<float>(blockIdx.x * blockDim.x + threadIdx.x) * 0.93f + 3.0f;
  const float y0 = static_cast<float>(blockIdx.y * blockDim.y + threadIdx.y) * 0.87f + 3.0f;
  float acc = 0.0f;
#pragma unroll 4
  for (int step = 0; step < kSteps; ++step) {
    const float x = fmodf(x0 + 0.41f * static_cast<float>(step), 1000.0f);
    const float y = fmodf(y0 + 0.29f * static_cast<float>(step), 1000.0f);
    const int layer = step & (kLayers - 1);
    if constexpr (kFetch == Fetch::kFiltered) {
      acc += tex2DLayered<float>(filtered, x, y, layer);
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
  const cuda::TextureRef ref = store.slot_ref(0);  // linear storage: slots are contiguous
  const dim3 block(32, 8);
  const dim3 grid(64, 128);  // 2M threads: fills the GPU many times over
  const double samples = static_cast<double>(grid.x * block.x) * grid.y * block.y * kSteps;
  const double ms = median_ms(
      [&](cudaStream_t stream) {
        ceiling_kernel<kFetch><<<grid, block, 0, stream>>>(ref.texture, ref.linear, out);
        SLICESTREAM_CUDA_CHECK_LAUNCH("ceiling_kernel");
      },
      7, timing_stream());
  return samples / (ms * 1e-3);
}

}  // namespace

std::vector<CeilingResult> measure_ceilings() {
  const cuda::ProjectionStorage storages[] = {cuda::ProjectionStorage::kTexture,
                                              cuda::ProjectionStorage::kTextureHalf,
                                              cuda::ProjectionStorage::kLinear};
  std::vector<std::unique_ptr<cuda::ProjectionTextureStore>> stores;
  cuda::DeviceBuffer<float> projection(kShape.pixels());
  for (cuda::ProjectionStorage storage : storages) {
    cuda::ProjectionStoreOptions options;
    options.storage = storage;
    stores.push_back(std::make_unique<cuda::ProjectionTextureStore>(0, kShape, kLayers, options));
  }
  for (int layer = 0; layer < kLayers; ++layer) {
    fill_smooth_random(projection.data(), kShape, 1000u + static_cast<unsigned>(layer), nullptr);
    for (auto& store : stores)
      store->write_slot(layer, projection.data(), nullptr);
  }
  cuda::DeviceBuffer<float> out(64 * 32 * 128 * 8);
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<CeilingResult> results;
  results.push_back({"texture bilinear fetch (hardware filtering), fp32 texels",
                     samples_per_second<Fetch::kFiltered>(*stores[0], out.data()), "fetch/s"});
  results.push_back({"texture bilinear fetch (hardware filtering), fp16 texels",
                     samples_per_second<Fetch::kFiltered>(*stores[1], out.data()), "fetch/s"});
  results.push_back({"four L1 loads (2x2 texels from linear memory)",
                     samples_per_second<Fetch::kL1Loads>(*stores[2], out.data()), "sample/s"});

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
