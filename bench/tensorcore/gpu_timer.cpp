#include "bench/tensorcore/gpu_timer.hpp"

#include <algorithm>
#include <vector>

#include "kernels/tensorcore/cuda/cuda_check.hpp"
#include "kernels/tensorcore/cuda/device_buffer.hpp"

namespace slicestream::tensorcore::bench {

using cuda::check;

double median_ms(const std::function<void()>& work, int repetitions, cudaStream_t stream) {
  for (int i = 0; i < 2; ++i)
    work();
  check(cudaStreamSynchronize(stream), "warm-up");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  std::vector<float> times;
  for (int i = 0; i < repetitions; ++i) {
    check(cudaEventRecord(start, stream), "record");
    work();
    check(cudaEventRecord(stop, stream), "record");
    check(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double copy_bandwidth_gbs(std::size_t bytes, int repetitions, cudaStream_t stream) {
  cuda::DeviceBuffer<unsigned char> a(bytes), b(bytes);
  check(cudaMemsetAsync(a.data(), 1, bytes, stream), "memset");
  const double ms = median_ms(
      [&] {
        check(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, stream), "copy");
      },
      repetitions, stream);
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

}  // namespace slicestream::tensorcore::bench
