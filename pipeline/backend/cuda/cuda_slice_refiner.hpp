// The CUDA backend's SliceRefiner: the slice's distance-driven matrix as the Tensor Core
// projector's fp16 BSR blocks (kernels/tensorcore/cuda/tensorcore_projector.hpp, paper Fig. 2)
// and GPU CGLS (cgls_gpu), on a CUDA stream of its own so that refinement never queues behind
// or in front of the stage streams. The matrix is built on the host (the calling thread, the
// pipeline's refinement worker) and uploaded once; the projector's operand work space and the
// CGLS workspace are allocated with it and kept across solves, so a refinement allocates nothing
// (the residual history grows beyond kCudaRefinerIterations iterations, 8 bytes each).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "pipeline/backend/backend.hpp"
#include "pipeline/backend/device_memory_admissions.hpp"
#include "pipeline/backend/memory_charge.hpp"

namespace slicestream {

// Throws BackendError when the setup is invalid or the refiner (estimated_cuda_refiner_bytes
// before the build, its real size after) does not fit in the device's free memory minus
// `reserve_bytes`. The refiner charges the device memory it holds to `account` while it lives.
// Both checks are `admissions`' (device_memory_admissions.hpp); the second one's ticket is held
// until the refiner's allocations are made.
std::unique_ptr<SliceRefiner> make_cuda_slice_refiner(int device, const RefinementSetup& setup,
                                                      std::size_t reserve_bytes,
                                                      MemoryAccount account,
                                                      DeviceMemoryAdmissions& admissions);

// How far the refiner of `setup` (its estimate, estimated_cuda_refiner_bytes) would exceed the
// device's free memory less `reserve_bytes` (device_memory_shortfall); empty where it fits. Takes
// no ticket: an advisory look before work that allocates nothing yet.
std::string refiner_memory_shortfall(const RefinementSetup& setup,
                                     const DeviceMemoryAdmissions& admissions,
                                     std::size_t reserve_bytes);

}  // namespace slicestream
