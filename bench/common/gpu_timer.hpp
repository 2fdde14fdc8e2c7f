// GPU timing for the benchmarks: CUDA events around enqueued work, warm-up runs first, the
// median of the repeated runs; and the device-to-device copy bandwidth measured the same way.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace slicestream::bench {

// A stream of the benchmarks' own (not the legacy default stream), created on first use.
cudaStream_t timing_stream();

// Median milliseconds of enqueue(stream) over `repetitions` runs after `warm_ups` untimed ones.
double median_ms(const std::function<void(cudaStream_t)>& enqueue, int repetitions,
                 cudaStream_t stream, int warm_ups = 1);

// GB/s counting bytes read plus bytes written, copying `bytes` per repetition.
double copy_bandwidth_gbs(std::size_t bytes, int repetitions, cudaStream_t stream);

}  // namespace slicestream::bench
