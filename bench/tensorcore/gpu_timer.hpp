// Median of CUDA-event timings of a callable (after warm-up), and the device-to-device copy
// bandwidth measured the same way (bytes read + written per second).
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace slicestream::tensorcore::bench {

double median_ms(const std::function<void()>& work, int repetitions, cudaStream_t stream);
// GB/s counting bytes read plus bytes written, copying `bytes` per repetition.
double copy_bandwidth_gbs(std::size_t bytes, int repetitions, cudaStream_t stream);

}  // namespace slicestream::tensorcore::bench
