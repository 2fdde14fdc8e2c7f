// GPU timing for the benchmark: CUDA events around the enqueued work, warm-up first, the median
// of repeated runs.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda/cuda_stream.hpp"

namespace slicestream::bench {

// Median milliseconds of `enqueue(stream)` over `reps` runs after one warm-up run.
template <class F>
double median_ms(int reps, F&& enqueue) {
  static cuda::Stream stream;
  cuda::Event start(true);
  cuda::Event stop(true);
  enqueue(stream.get());
  stream.synchronize();
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    start.record(stream.get());
    enqueue(stream.get());
    stop.record(stream.get());
    stop.synchronize();
    samples.push_back(stop.elapsed_ms_since(start));
  }
  std::nth_element(samples.begin(), samples.begin() + static_cast<long>(samples.size() / 2),
                   samples.end());
  return samples[samples.size() / 2];
}

}  // namespace slicestream::bench
