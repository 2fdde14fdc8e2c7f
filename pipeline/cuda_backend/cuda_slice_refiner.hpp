// The CUDA backend's SliceRefiner: the slice's distance-driven matrix as the Tensor Core
// projector's fp16 BSR blocks (kernels/tensorcore/cuda/tensorcore_projector.hpp, paper Fig. 2)
// and GPU CGLS (cgls_gpu), on a CUDA stream of its own so that refinement never queues behind
// or in front of the stage streams. The matrix is built on the host (the calling thread, the
// pipeline's refinement worker) and uploaded once.
#pragma once

#include <cstddef>
#include <memory>

#include "pipeline/backend.hpp"

namespace slicestream {

// Throws BackendError when the setup is invalid or the matrix does not fit in the device's free
// memory minus `reserve_bytes`.
std::unique_ptr<SliceRefiner> make_cuda_slice_refiner(int device, const RefinementSetup& setup,
                                                      std::size_t reserve_bytes);

}  // namespace slicestream
