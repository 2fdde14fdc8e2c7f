// Error checking for CUDA runtime and cuSPARSE calls: every failure becomes an exception naming
// the call (the pipeline turns exceptions into BackendError at its stage boundary).
#pragma once

#include <cuda_runtime.h>
#include <cusparse.h>

#include <stdexcept>
#include <string>

namespace slicestream::tensorcore::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

// After a kernel launch: launch-configuration errors now, execution errors at the next sync.
inline void check_launch(const char* kernel) {
  check(cudaGetLastError(), kernel);
}

inline void check(cusparseStatus_t status, const char* what) {
  if (status != CUSPARSE_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cusparseGetErrorString(status));
  }
}

// True when a CUDA device is usable (tests skip otherwise).
inline bool device_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

}  // namespace slicestream::tensorcore::cuda
