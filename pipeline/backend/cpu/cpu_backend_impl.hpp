// CpuBackend's state, shared by cpu_backend.cpp (scan set-up, preprocess, filter, targets) and
// cpu_backend_store.cpp (the projection store and backprojection). Private to pipeline/.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cpu/backproject_cpu.hpp"
#include "kernels/cpu/preprocess_cpu.hpp"
#include "kernels/cpu/ramp_filter_cpu.hpp"
#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "pipeline/backend/cpu/cpu_buffers.hpp"
#include "pipeline/backend/cpu/worker_pool.hpp"
#include "pipeline/backend/memory_charge.hpp"
#include "pipeline/backend/pending_counts.hpp"
#include "pipeline/backend/store_slots.hpp"
#include "pipeline/backend/update_plan.hpp"

namespace slicestream {

// Error messages of the CPU backend start with this.
inline const char* const kCpuOwner = "cpu backend";

// One target updated from a list of projections over a plane range.
struct BackprojectionJob {
  CpuTarget* target;
  const cpu::ProjectionRef* refs;
  int count;
  float scale;
  int plane_begin;
  int plane_end;
};

// Throws BackendError for a buffer of another backend.
CpuProjection& cpu_projection(ProjectionBuffer& buffer);

struct CpuBackend::Impl {
  Impl(const CpuBackendOptions& options, SharedMemoryBudget budget);

  WorkerPool workers;
  const std::size_t memory_total;
  // The host memory budget: the scan, the targets and the refiners count against it, beside
  // what the pipeline and the server charge (slice images, GetSlice results, replies).
  const SharedMemoryBudget budget;
  const std::string device;
  MemoryAccount target_bytes = budget->add_account();
  // What the slice refiners hold (they charge it while they live, on the refinement worker).
  MemoryAccount refiner_bytes = budget->add_account();
  // Memory in use under the limit: the scan, the targets, the refiners and everything else
  // charged to the budget.
  std::size_t used() const { return budget->used_bytes(); }
  std::size_t memory_limit() const { return budget->limit_bytes(); }

  // Scan state: written by begin_scan/end_scan while the stages are idle.
  bool scan_active = false;
  ScanSetup setup;
  MemoryAccount scan_bytes = budget->add_account();  // also read by the refinement worker
  std::shared_ptr<ProjectionPool> projections;
  StoreSlots slots{kCpuOwner};                         // filled, maps
  std::vector<std::unique_ptr<CpuProjection>> stored;  // the filtered projection of each slot
  PendingCounts preprocess_counts;                     // preprocess thread only

  // Swapped by the reconstruct thread while preprocess/filter threads may read them.
  mutable std::mutex swap_mutex;
  std::shared_ptr<const cpu::PreprocessTables> tables;
  std::shared_ptr<const cpu::RampFilter> ramp;
  FilterConfig filter_config;

  void require_scan(const char* operation) const {
    if (!scan_active) {
      throw BackendError(std::string("cpu backend: ") + operation + " without an active scan");
    }
  }

  std::size_t row_grain(int rows) const {
    const int parts = 4 * workers.max_participants();
    return static_cast<std::size_t>(std::max(1, rows / parts));
  }

  std::shared_ptr<const cpu::RampFilter> make_ramp(const FilterConfig& config) const {
    try {
      return std::make_shared<const cpu::RampFilter>(setup.geometry.detector, config,
                                                     workers.max_participants());
    } catch (const BackendError&) {
      throw;
    } catch (const std::exception& e) {
      throw BackendError(std::string("cpu backend: cannot set up the ramp filter: ") + e.what());
    }
  }

  void run_backprojection(const std::vector<BackprojectionJob>& jobs);
  // The longest run of an update plan: the batch the pipeline was set up with.
  std::size_t max_run() const {
    return static_cast<std::size_t>(std::max(1, setup.max_projection_batch));
  }
  // One run of an update plan (distinct slots) in one backprojection (cpu_backend_store.cpp).
  void apply_run(const UpdateRun& run, std::vector<ProjectionUpdate>& updates, float scale);
  // values := minuend - values, over the workers.
  void subtract_in_place(const std::vector<float>& minuend, std::vector<float>& values);
};

}  // namespace slicestream
