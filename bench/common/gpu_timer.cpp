#include "bench/common/gpu_timer.hpp"

#include <utility>
#include <vector>

#include "bench/common/median.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace slicestream::bench {

cudaStream_t timing_stream() {
  static cuda::Stream stream;
  return stream.get();
}

double median_ms(const std::function<void(cudaStream_t)>& enqueue, int repetitions,
                 cudaStream_t stream, int warm_ups) {
  for (int i = 0; i < warm_ups; ++i)
    enqueue(stream);
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  cuda::Event start(true);
  cuda::Event stop(true);
  std::vector<double> samples;
  for (int i = 0; i < repetitions; ++i) {
    start.record(stream);
    enqueue(stream);
    stop.record(stream);
    stop.synchronize();
    samples.push_back(stop.elapsed_ms_since(start));
  }
  return median(std::move(samples));
}

double copy_bandwidth_gbs(std::size_t bytes, int repetitions, cudaStream_t stream) {
  cuda::DeviceBuffer<unsigned char> a(bytes), b(bytes);
  SLICESTREAM_CUDA_CHECK(cudaMemsetAsync(a.data(), 1, bytes, stream));
  const double ms = median_ms(
      [&](cudaStream_t s) {
        SLICESTREAM_CUDA_CHECK(
            cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, s));
      },
      repetitions, stream, 2);
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

}  // namespace slicestream::bench
