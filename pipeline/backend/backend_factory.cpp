// make_backend(): the one place that knows which backends exist.
#include <memory>
#include <string>

#include "pipeline/backend/backend.hpp"
#include "pipeline/backend/cpu/cpu_backend.hpp"

#if defined(SLICESTREAM_WITH_CUDA)
#include "pipeline/backend/cuda/cuda_backend.hpp"
#endif

namespace slicestream {

std::string cuda_unavailable_reason(int device) {
#if defined(SLICESTREAM_WITH_CUDA)
  return cuda_unavailable_reason_impl(device);
#else
  (void)device;
  return "built without CUDA";
#endif
}

std::unique_ptr<Backend> make_backend(BackendKind kind, const BackendOptions& options) {
  if (kind == BackendKind::kCpu) return std::make_unique<CpuBackend>(options.cpu);
  const std::string reason = cuda_unavailable_reason(options.cuda.device);
  if (!reason.empty()) {
    if (kind == BackendKind::kCuda) {
      throw BackendError("the CUDA backend is not available: " + reason);
    }
    return std::make_unique<CpuBackend>(options.cpu);
  }
#if defined(SLICESTREAM_WITH_CUDA)
  std::unique_ptr<Backend> cuda = make_cuda_backend(options.cuda);
  // Device memory has its own admission (device_memory_budget.hpp); the host budget covers what
  // clients make the host hold (slice images, GetSlice results, replies).
  cuda->host_memory()->set_limit_bytes(options.cpu.memory_limit_bytes);
  return cuda;
#else
  throw BackendError("the CUDA backend is not available: built without CUDA");
#endif
}

}  // namespace slicestream
