// Checked CUDA and cuFFT calls: every failure becomes a CudaError naming the call, file and line.
// The CUDA backend turns CudaError into BackendError at its boundary (kernels/ knows no pipeline).
#pragma once

#include <cuda_runtime.h>
#include <cufft.h>

#include <stdexcept>
#include <string>

namespace slicestream::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                   int line);
[[noreturn]] void throw_cufft_error(cufftResult status, const char* call, const char* file,
                                    int line);
const char* cufft_result_name(cufftResult status);
// Failures of the other CUDA libraries (e.g. cuSPARSE, whose checks live with their users):
// "<library> error <status> in <call> at <file>:<line>".
[[noreturn]] void throw_library_error(const char* library, const char* status, const char* call,
                                      const char* file, int line);

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw_cuda_error(status, call, file, line);
}
inline void check_cufft(cufftResult status, const char* call, const char* file, int line) {
  if (status != CUFFT_SUCCESS) throw_cufft_error(status, call, file, line);
}

// Launch errors (bad configuration) surface at cudaGetLastError; faults during execution at the
// next synchronising call, which is checked too.
void check_last_launch(const char* kernel, const char* file, int line);

}  // namespace slicestream::cuda

#define SLICESTREAM_CUDA_CHECK(call) \
  ::slicestream::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define SLICESTREAM_CUFFT_CHECK(call) \
  ::slicestream::cuda::check_cufft((call), #call, __FILE__, __LINE__)
#define SLICESTREAM_CUDA_CHECK_LAUNCH(kernel) \
  ::slicestream::cuda::check_last_launch((kernel), __FILE__, __LINE__)
