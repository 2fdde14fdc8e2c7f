// The host's work before a backprojection launch, timed: cuda_bench beside its GPU timings and
// host_prepare_bench on its own (no GPU needed).
#pragma once

#include <chrono>
#include <utility>
#include <vector>

#include "bench/common/median.hpp"
#include "kernels/cuda/backprojector.hpp"
#include "kernels/cuda/launch_sequence.hpp"

namespace slicestream::bench {

// Median microseconds of Backprojector::append (the path checks, the tuning's resolution, the
// launch parameters) into a fresh sequence, over `reps` calls after one untimed.
inline double host_prepare_us(const cuda::Backprojector& backprojector,
                              const std::vector<cuda::BackprojectJob>& jobs, int reps) {
  std::vector<double> samples;
  for (int r = 0; r < reps + 1; ++r) {
    const auto start = std::chrono::steady_clock::now();
    cuda::LaunchSequence sequence;
    backprojector.append(jobs, sequence);
    const auto stop = std::chrono::steady_clock::now();
    if (r > 0) samples.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
  }
  return median(std::move(samples));
}

}  // namespace slicestream::bench
