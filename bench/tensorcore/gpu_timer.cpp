#include "bench/tensorcore/gpu_timer.hpp"

#include <algorithm>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace slicestream::tensorcore::bench {

double median_ms(const std::function<void()>& work, int repetitions, cudaStream_t stream) {
  for (int i = 0; i < 2; ++i)
    work();
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  cudaEvent_t start, stop;
  SLICESTREAM_CUDA_CHECK(cudaEventCreate(&start));
  SLICESTREAM_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int i = 0; i < repetitions; ++i) {
    SLICESTREAM_CUDA_CHECK(cudaEventRecord(start, stream));
    work();
    SLICESTREAM_CUDA_CHECK(cudaEventRecord(stop, stream));
    SLICESTREAM_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SLICESTREAM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double copy_bandwidth_gbs(std::size_t bytes, int repetitions, cudaStream_t stream) {
  ::slicestream::cuda::DeviceBuffer<unsigned char> a(bytes), b(bytes);
  SLICESTREAM_CUDA_CHECK(cudaMemsetAsync(a.data(), 1, bytes, stream));
  const double ms = median_ms(
      [&] {
        SLICESTREAM_CUDA_CHECK(
            cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, stream));
      },
      repetitions, stream);
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

}  // namespace slicestream::tensorcore::bench
