// The CPU backend's SliceRefiner: the fp32 CSR distance-driven matrix
// (kernels/tensorcore/sparse_matrix.hpp) and cgls_cpu, both in parallel on the backend's worker
// pool, with a CGLS workspace kept across solves.
#pragma once

#include <memory>

#include "kernels/executor.hpp"
#include "pipeline/backend/backend.hpp"
#include "pipeline/backend/memory_budget.hpp"
#include "pipeline/backend/memory_charge.hpp"

namespace slicestream {

// Throws BackendError for an invalid setup, or when `budget` has no room for the refiner
// (estimated_cpu_refiner_bytes, held from the check while the matrix is built, so that no other
// charge takes it meanwhile; null: no limit), or when it cannot be allocated. The refiner charges
// what it holds to `account` while it lives. The matrix is built and the products run on
// `workers`, which must outlive the refiner.
std::unique_ptr<SliceRefiner> make_cpu_slice_refiner(const RefinementSetup& setup,
                                                     Executor& workers,
                                                     const SharedMemoryBudget& budget,
                                                     MemoryAccount account);

}  // namespace slicestream
