#include "kernels/cuda/cuda_check.hpp"

#include <cstdio>

namespace slicestream::cuda {
namespace {

std::string where(const char* file, int line) {
  std::string path(file);
  // Keep the path from the repository's top folders on, not the build machine's prefix.
  for (const char* top : {"/kernels/", "/pipeline/", "/tests/", "/bench/"}) {
    const auto pos = path.rfind(top);
    if (pos != std::string::npos) return path.substr(pos + 1) + ":" + std::to_string(line);
  }
  return path + ":" + std::to_string(line);
}

}  // namespace

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  throw CudaError(std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
                  cudaGetErrorString(status) + ") in " + call + " at " + where(file, line));
}

void throw_cufft_error(cufftResult status, const char* call, const char* file, int line) {
  throw CudaError(std::string("cuFFT error ") + cufft_result_name(status) + " in " + call + " at " +
                  where(file, line));
}

void throw_library_error(const char* library, const char* status, const char* call,
                         const char* file, int line) {
  throw CudaError(std::string(library) + " error " + status + " in " + call + " at " +
                  where(file, line));
}

void check_last_launch(const char* kernel, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    throw CudaError(std::string("CUDA launch of ") + kernel +
                    " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                    ") at " + where(file, line));
  }
}

const char* cufft_result_name(cufftResult status) {
  switch (status) {
    case CUFFT_SUCCESS:
      return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN:
      return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED:
      return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE:
      return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE:
      return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR:
      return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED:
      return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED:
      return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE:
      return "CUFFT_INVALID_SIZE";
    case CUFFT_INVALID_DEVICE:
      return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE:
      return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED:
      return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_UNALIGNED_DATA:
      return "CUFFT_UNALIGNED_DATA";
    case CUFFT_NOT_SUPPORTED:
      return "CUFFT_NOT_SUPPORTED";
    case CUFFT_MISSING_DEPENDENCY:
      return "CUFFT_MISSING_DEPENDENCY";
    case CUFFT_NVRTC_FAILURE:
      return "CUFFT_NVRTC_FAILURE";
    case CUFFT_NVJITLINK_FAILURE:
      return "CUFFT_NVJITLINK_FAILURE";
    case CUFFT_NVSHMEM_FAILURE:
      return "CUFFT_NVSHMEM_FAILURE";
    default:
      return "unknown cuFFT error";
  }
}

}  // namespace slicestream::cuda
