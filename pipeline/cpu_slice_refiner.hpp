// The CPU backend's SliceRefiner: the fp32 CSR distance-driven matrix
// (kernels/tensorcore/sparse_matrix.hpp) and cgls_cpu, both multi-threaded.
#pragma once

#include <memory>

#include "pipeline/backend.hpp"

namespace slicestream {

// Throws BackendError for an invalid setup, or when the matrix would exceed
// `memory_limit_bytes` (estimated before building; 0: no limit) or cannot be allocated.
std::unique_ptr<SliceRefiner> make_cpu_slice_refiner(const RefinementSetup& setup, int threads,
                                                     std::size_t memory_limit_bytes);

}  // namespace slicestream
