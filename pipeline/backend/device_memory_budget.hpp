// The CUDA backend's admission rule for device memory, as host arithmetic (tested without a
// GPU): an allocation fits when it leaves `reserve_bytes` (CudaBackendOptions::reserve_bytes) of
// what the driver reports free for the driver, cuFFT plans and other processes. The free memory
// already excludes everything the backend holds: the scan (store, buffers), the targets and the
// slice refiners (matrices, operand and CGLS workspaces), which BackendInfo reports.
#pragma once

#include <cstddef>
#include <string>

namespace slicestream {

// What may still be allocated: free_bytes - reserve_bytes, 0 when the reserve is not free.
std::size_t usable_device_bytes(std::size_t free_bytes, std::size_t reserve_bytes);

// Empty when `bytes` fit, else the numbers in words: "<bytes> MiB, <free> MiB are free and
// <reserve> MiB stay reserved".
std::string device_memory_shortfall(std::size_t bytes, std::size_t free_bytes,
                                    std::size_t reserve_bytes);

}  // namespace slicestream
