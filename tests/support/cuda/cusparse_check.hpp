// Checked cuSPARSE calls, in the style of kernels/cuda/cuda_check.hpp (whose CudaError they
// throw): SLICESTREAM_CUSPARSE_CHECK(cusparseSpMM(...)).
#pragma once

#include <cusparse.h>

#include "kernels/cuda/cuda_check.hpp"

namespace slicestream::tensorcore::cuda {

inline void check_cusparse(cusparseStatus_t status, const char* call, const char* file, int line) {
  if (status != CUSPARSE_STATUS_SUCCESS) {
    ::slicestream::cuda::throw_library_error("cuSPARSE", cusparseGetErrorName(status), call, file,
                                             line);
  }
}

}  // namespace slicestream::tensorcore::cuda

#define SLICESTREAM_CUSPARSE_CHECK(call) \
  ::slicestream::tensorcore::cuda::check_cusparse((call), #call, __FILE__, __LINE__)
