// Internal to the CUDA backend: its state and the helpers its two source files share
// (cuda_backend.cpp: lifecycle, stages, targets; cuda_backend_reconstruct.cpp: store updates and
// backprojection).
#pragma once

#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/device_probe.hpp"
#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/cuda/preprocessor.hpp"
#include "kernels/cuda/projection_texture_store.hpp"
#include "kernels/cuda/ramp_filter_cuda.hpp"
#include "pipeline/backend/cuda/cuda_backend.hpp"
#include "pipeline/backend/cuda/cuda_buffers.hpp"
#include "pipeline/backend/cuda/cuda_readback.hpp"
#include "pipeline/backend/device_memory_admissions.hpp"
#include "pipeline/backend/device_memory_budget.hpp"
#include "pipeline/backend/memory_charge.hpp"
#include "pipeline/backend/pending_counts.hpp"
#include "pipeline/backend/store_slots.hpp"
#include "pipeline/backend/update_plan.hpp"

namespace slicestream {
namespace cuda_backend_detail {

// Projection buffers allocated up front beyond what the pipeline says it holds in flight.
inline constexpr std::size_t kSpareProjections = 4;
inline constexpr std::size_t kDefaultInFlight = 8;

inline std::string mib(std::size_t bytes) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return out.str();
}

// Runs `body`, turning CUDA, allocation and argument failures into BackendError.
template <class F>
auto guarded(const char* operation, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const BackendError&) {
    throw;
  } catch (const cuda::CudaError& e) {
    throw BackendError(std::string("cuda backend: ") + operation + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw BackendError(std::string("cuda backend: ") + operation + ": out of host memory");
  } catch (const std::exception& e) {
    throw BackendError(std::string("cuda backend: ") + operation + ": " + e.what());
  }
}

// Error messages of the CUDA backend start with this.
inline const char* const kCudaOwner = "cuda backend";

inline CudaTarget& cuda_target(ReconTarget& target) {
  auto* t = dynamic_cast<CudaTarget*>(&target);
  if (t == nullptr) throw BackendError("cuda backend: reconstruction target of another backend");
  return *t;
}

inline const CudaTarget& cuda_target(const ReconTarget& target) {
  const auto* t = dynamic_cast<const CudaTarget*>(&target);
  if (t == nullptr) throw BackendError("cuda backend: reconstruction target of another backend");
  return *t;
}

// Everything that lives for one scan.
struct ScanState {
  ScanSetup setup;
  std::uint64_t id = 0;
  std::size_t budget_bytes = 0;
  StoreSlots slots{kCudaOwner};  // filled, maps
  std::unique_ptr<cuda::ProjectionTextureStore> store;
  std::unique_ptr<cuda::Preprocessor> preprocessor;
  std::unique_ptr<cuda::RampFilterCuda> ramp;
  cuda::FilteredRows filtered_rows = cuda::FilteredRows::kDense;  // filtered_rows(options)
  std::shared_ptr<CudaProjectionPool> pool;
  std::unique_ptr<cuda::Backprojector> backprojector;
  std::unique_ptr<cuda::GraphReplayer> reconstruct_graph;  // null without graphs
};

// What the replacement pass leaves in an update's scratch layer.
inline cuda::ScratchContent scratch_content(LiveUpdate live) {
  switch (live) {
    case LiveUpdate::kDifference:
      return cuda::ScratchContent::kDifference;
    case LiveUpdate::kNewMinusOld:
      return cuda::ScratchContent::kOldProjection;
    default:
      return cuda::ScratchContent::kUnchanged;
  }
}

// Sets how the host threads wait for the current device (CudaHostWait), keeping its other flags.
// CUDA applies the flags to the device's context whether or not it is active yet.
inline void set_host_wait(CudaHostWait wait) {
  unsigned int schedule = cudaDeviceScheduleAuto;
  switch (wait) {
    case CudaHostWait::kSpin:
      schedule = cudaDeviceScheduleSpin;
      break;
    case CudaHostWait::kYield:
      schedule = cudaDeviceScheduleYield;
      break;
    case CudaHostWait::kBlock:
      schedule = cudaDeviceScheduleBlockingSync;
      break;
    case CudaHostWait::kAuto:
      break;
  }
  unsigned int flags = 0;
  SLICESTREAM_CUDA_CHECK(cudaGetDeviceFlags(&flags));
  SLICESTREAM_CUDA_CHECK(cudaSetDeviceFlags((flags & ~cudaDeviceScheduleMask) | schedule));
}

}  // namespace cuda_backend_detail

struct CudaBackend::Impl {
  using ScanState = cuda_backend_detail::ScanState;
  Impl(int device_index, const CudaBackendOptions& opts) : device(device_index), options(opts) {
    SLICESTREAM_CUDA_CHECK(cudaSetDevice(device));
    cuda_backend_detail::set_host_wait(options.host_wait);
    summary = cuda::describe_device(device);
    preprocess_stream = std::make_unique<cuda::Stream>();
    filter_stream = std::make_unique<cuda::Stream>();
    reconstruct_stream = std::make_unique<cuda::Stream>();
  }

  const int device;
  CudaBackendOptions options;
  cuda::DeviceSummary summary;
  std::unique_ptr<cuda::Stream> preprocess_stream;
  std::unique_ptr<cuda::Stream> filter_stream;
  std::unique_ptr<cuda::Stream> reconstruct_stream;
  std::shared_ptr<std::atomic<std::size_t>> target_bytes =
      std::make_shared<std::atomic<std::size_t>>(0);
  // Device memory the slice refiners hold (matrices, operand and CGLS workspaces), charged by
  // them on the refinement worker while they live.
  MemoryAccount refiner_bytes = std::make_shared<std::atomic<std::size_t>>(0);
  std::uint64_t next_scan_id = 1;
  std::shared_ptr<PinnedStagingPool> readback_pool =
      std::make_shared<PinnedStagingPool>(options.readback_lend_bytes);

  std::unique_ptr<ScanState> scan;  // written by begin_scan/end_scan while the stages are idle

  // Device-memory admissions (the scan, targets, refiners) from the reconstruct stage and the
  // refinement worker: each holds a ticket for its bytes until its allocations are made.
  DeviceMemoryAdmissions admissions{[this] {
    use_device();
    DeviceMemoryInfo memory;
    SLICESTREAM_CUDA_CHECK(cudaMemGetInfo(&memory.free_bytes, &memory.total_bytes));
    return memory;
  }};

  std::mutex preprocess_mutex;  // preprocess vs set_calibration
  // Counts of an ended scan's frames not yet taken (its preprocessor is gone).
  PendingCounts ended_scan_counts;
  std::mutex filter_mutex;  // filter vs set_filter
  FilterConfig filter_config;
  bool filter_config_pending = false;

  void use_device() const { SLICESTREAM_CUDA_CHECK(cudaSetDevice(device)); }

  ScanState& require_scan(const char* operation) const {
    if (!scan) {
      throw BackendError(std::string("cuda backend: ") + operation + " without an active scan");
    }
    return *scan;
  }

  void synchronize_all() const {
    preprocess_stream->synchronize();
    filter_stream->synchronize();
    reconstruct_stream->synchronize();
  }

  CudaProjection& own_projection(ProjectionBuffer& buffer, const ScanState& s) const {
    auto* projection = dynamic_cast<CudaProjection*>(&buffer);
    if (projection == nullptr) {
      throw BackendError("cuda backend: projection buffer of another backend");
    }
    if (projection->scan_id() != s.id) {
      throw BackendError("cuda backend: projection buffer of an earlier scan");
    }
    return *projection;
  }

  // One run of an update plan (distinct slots, at most one per scratch layer) as one
  // replacement pass and one backprojection (cuda_backend_reconstruct.cpp).
  void apply_run(ScanState& s, const UpdateRun& run, std::vector<ProjectionUpdate>& updates,
                 float scale);
};

}  // namespace slicestream
