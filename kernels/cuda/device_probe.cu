#include "kernels/cuda/device_probe.hpp"

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.hpp"

namespace slicestream::cuda {
namespace {

__global__ void probe_kernel(int* out) {
  if (out != nullptr) *out = 1;
}

}  // namespace

std::string device_unavailable_reason(int device) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("CUDA is not usable here: ") + cudaGetErrorName(status) + " (" +
           cudaGetErrorString(status) + ")";
  }
  if (count == 0) return "no CUDA device found";
  if (device < 0 || device >= count) {
    return "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
           " found)";
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "cannot query CUDA device " + std::to_string(device);
  }
  // The binary holds code for the architectures it was built for; a GPU without a compatible
  // image reports cudaErrorInvalidDeviceFunction (or NoKernelImageForDevice) here.
  if (cudaSetDevice(device) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("cannot use CUDA device ") + prop.name;
  }
  cudaFuncAttributes attributes{};
  const cudaError_t image = cudaFuncGetAttributes(&attributes, probe_kernel);
  if (image != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string(prop.name) + " (compute capability " + std::to_string(prop.major) + "." +
           std::to_string(prop.minor) +
           ") cannot run this build's kernels: " + cudaGetErrorString(image);
  }
  return {};
}

DeviceSummary describe_device(int device) {
  cudaDeviceProp prop{};
  SLICESTREAM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  SLICESTREAM_CUDA_CHECK(cudaSetDevice(device));
  DeviceSummary s;
  s.name = prop.name;
  s.compute_major = prop.major;
  s.compute_minor = prop.minor;
  s.multiprocessors = prop.multiProcessorCount;
  SLICESTREAM_CUDA_CHECK(cudaMemGetInfo(&s.memory_free_bytes, &s.memory_total_bytes));
  return s;
}

int current_device_multiprocessors() {
  int device = 0, count = 0;
  SLICESTREAM_CUDA_CHECK(cudaGetDevice(&device));
  SLICESTREAM_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

std::size_t current_device_l2_bytes() {
  int device = 0, bytes = 0;
  SLICESTREAM_CUDA_CHECK(cudaGetDevice(&device));
  SLICESTREAM_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
  return static_cast<std::size_t>(bytes);
}

}  // namespace slicestream::cuda
