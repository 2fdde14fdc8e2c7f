// The CPU backend's SliceRefiner: the fp32 CSR distance-driven matrix
// (kernels/tensorcore/sparse_matrix.hpp) and cgls_cpu, both in parallel on the backend's worker
// pool, with a CGLS workspace kept across solves.
#pragma once

#include <memory>

#include "kernels/executor.hpp"
#include "pipeline/backend/backend.hpp"
#include "pipeline/backend/memory_charge.hpp"

namespace slicestream {

// Throws BackendError for an invalid setup, or when the refiner would exceed
// `memory_limit_bytes` (estimated_cpu_refiner_bytes before building; 0: no limit) or cannot be
// allocated. The refiner charges what it holds to `account` while it lives. The matrix is built
// and the products run on `workers`, which must outlive the refiner.
std::unique_ptr<SliceRefiner> make_cpu_slice_refiner(const RefinementSetup& setup,
                                                     Executor& workers,
                                                     std::size_t memory_limit_bytes,
                                                     MemoryAccount account);

}  // namespace slicestream
