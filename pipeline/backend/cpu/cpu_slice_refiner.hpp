// The CPU backend's SliceRefiner: the fp32 CSR distance-driven matrix
// (kernels/tensorcore/sparse_matrix.hpp) and cgls_cpu, both multi-threaded, with a CGLS workspace
// kept across solves.
#pragma once

#include <memory>

#include "pipeline/backend/backend.hpp"
#include "pipeline/backend/memory_charge.hpp"

namespace slicestream {

// Throws BackendError for an invalid setup, or when the refiner would exceed
// `memory_limit_bytes` (estimated_cpu_refiner_bytes before building; 0: no limit) or cannot be
// allocated. The refiner charges what it holds to `account` while it lives.
std::unique_ptr<SliceRefiner> make_cpu_slice_refiner(const RefinementSetup& setup, int threads,
                                                     std::size_t memory_limit_bytes,
                                                     MemoryAccount account);

}  // namespace slicestream
