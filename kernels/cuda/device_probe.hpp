// Whether this process can run the CUDA kernels of this build, and on what.
#pragma once

#include <cstddef>
#include <string>

namespace slicestream::cuda {

// Empty when `device` exists and runs this build's kernels, else why not (no driver, no device,
// a GPU this build has no code for, ...). Never throws.
std::string device_unavailable_reason(int device = 0);

struct DeviceSummary {
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  std::size_t memory_total_bytes = 0;
  std::size_t memory_free_bytes = 0;
};
DeviceSummary describe_device(int device);  // throws CudaError
// Multiprocessors of the calling thread's current device (sizes grids of persistent CTAs and
// occupancy heuristics); throws CudaError.
int current_device_multiprocessors();
// Bytes of L2 cache of the calling thread's current device; throws CudaError.
std::size_t current_device_l2_bytes();

}  // namespace slicestream::cuda
