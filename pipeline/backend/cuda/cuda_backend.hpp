// The CUDA backend: Backend on one GPU. Three streams, one per calling stage thread
// (preprocess, filter, reconstruct); projections carry the event of their last use from stream to
// stream, so no stage blocks the host except preprocess, which waits for its guard counters.
//
//   preprocess   pinned ring -> async upload -> fused expression kernel (kernels/cuda/preprocessor)
//   filter       pad -> cuFFT R2C -> gains -> C2R, plans per detector (ramp_filter_cuda); the
//                C2R writes the padded rows into the projection's buffer, and the store's
//                replacement pass crops them as it writes the slot (no unpad pass, no copy)
//   reconstruct  ONE copy of the window (projection_texture_store: layered textures read with
//                hardware filtering, or fp32 rows for exact interpolation), updated in place;
//                one backprojection launch per call for all targets (backprojector);
//                a batch of projections (replace_projections) is one replacement pass and one
//                backprojection launch for all of them
// With graphs on (the default), each stage's per-frame work is one CUDA graph launch, captured
// once per scan and shape and replayed with the frame's pointers and coefficients
// (kernels/cuda/launch_sequence.hpp); event waits and records stay outside the graphs.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "kernels/cuda/backprojector.hpp"
#include "kernels/cuda/ramp_filter_cuda.hpp"
#include "pipeline/backend/backend.hpp"

namespace slicestream {

struct CudaBackendOptions {
  // Block shape, points per thread (0: automatic), interpolation, interleaving (automatic). The
  // default samples the store's layered texture with the hardware filter (docs/performance.md:
  // within a few 1e-4 of the CPU twin, its error against the object that of the CPU backend);
  // kExact reads fp32 rows with fp32 weights, the CPU backend to rounding.
  cuda::BackprojectTuning tuning{32, 4, 0, cuda::BackprojectInterpolation::kTexture};
  // fp16 texels in the store's texture (half the memory and bytes read; texture path only; values
  // beyond +-65504 clamped and counted, store_values_clamped); false: fp32 texels.
  bool half_texels = true;
  // With fp16 texels: stored as mirrored pairs (ProjectionStorage::kTextureHalfMirrored), one
  // fetch for a point of a vertical slice through the scan's centre plane and its mirror image.
  bool mirrored_texels = true;
  int max_layers_per_array = 0;  // 0: the device's layered-texture limit
  // GPU memory left free for the driver, cuFFT plans and other processes when admitting a scan,
  // a target or a slice refiner (pipeline/device_memory_budget.hpp).
  std::size_t reserve_bytes = std::size_t{256} << 20;
  // Per-frame work of each stage as one CUDA graph launch (false: kernel by kernel).
  bool use_graphs = true;
  // The filter leaves its padded rows and the store's replacement pass crops them while it writes
  // the slot and the difference (false: the filter crops in a pass of its own, and the
  // replacement reads the dense copy; projection buffers are then half as large).
  bool crop_in_store_update = true;
  // Published images keep their readback's page-locked buffer up to this many bytes in all
  // (cuda_readback.hpp); 0: every image's values are copied out of it.
  std::size_t readback_lend_bytes = kDefaultReadbackLendBytes;
  // How host threads wait for the GPU (backend_options.hpp), set on the device at start-up.
  CudaHostWait host_wait = CudaHostWait::kAuto;
};
// How the store keeps each projection for these options (one copy, as the interpolation reads it).
cuda::ProjectionStorage projection_storage(const CudaBackendOptions& options);
// How the filter leaves each projection for the store, for these options: the one place that
// decides whether the filter's crop is fused into the store's replacement pass.
cuda::FilteredRows filtered_rows(const CudaBackendOptions& options);

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, const CudaBackendOptions& options = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  BackendInfo info() const override;

  void begin_scan(const ScanSetup& setup) override;
  void end_scan() override;
  void set_calibration(const std::vector<float>& dark, const std::vector<float>& flat) override;
  void set_filter(const FilterConfig& config) override;

  std::unique_ptr<ProjectionBuffer> preprocess(const FrameView& raw,
                                               const ProjectionVector& vector) override;
  std::vector<PreprocessCounters> take_preprocess_counts() override;
  void filter(ProjectionBuffer& projection) override;
  void read_rows(ProjectionBuffer& projection, int row_begin, int count, float* host) override;

  std::unique_ptr<ReconTarget> create_target(const GridSpec& grid) override;
  void replace_projections(std::vector<ProjectionUpdate>& updates, float scale) override;
  std::uint64_t store_values_clamped() const override;
  void backproject_store(const std::vector<int>& slots, ReconTarget& target, float scale,
                         bool accumulate, int plane_begin, int plane_end) override;
  void set_slot_maps(const std::vector<ProjectionMap>& maps) override;
  void clear_target(ReconTarget& target) override;
  void copy_target(const ReconTarget& from, ReconTarget& to) override;
  void read_target(const ReconTarget& target, float* host) override;
  // Into pinned memory on the reconstruct stream (cuda_readback.hpp).
  std::unique_ptr<TargetReadback> read_target_async(const ReconTarget& target) override;

  // The Tensor Core projector (fp16 BSR matrix) and GPU CGLS on a stream of its own
  // (pipeline/backend/cuda/cuda_slice_refiner.hpp).
  std::unique_ptr<SliceRefiner> create_refiner(const RefinementSetup& setup) override;
  // The refiner's estimate (estimated_cuda_refiner_bytes) against the device's free memory less
  // reserve_bytes (device_memory_budget.hpp).
  std::string refiner_memory_problem(const RefinementSetup& setup) const override;

  // CUDA specifics (benchmarks, tests). The backprojection tuning is options().tuning, fixed at
  // construction; the store keeps each projection as projection_storage(options) says.
  // Graphs captured so far per stage of the current scan (0 without graphs): a stream of frames
  // of one shape must not capture again (tests).
  struct GraphCounts {
    std::size_t preprocess = 0;
    std::size_t filter = 0;
    std::size_t reconstruct = 0;
    std::size_t update_failures = 0;  // in-place updates the driver refused (all stages)
  };
  GraphCounts graph_captures() const;
  // Blocks until every stream is idle (benchmarks time whole calls with it).
  void synchronize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The operator's settings (server flags) as backend options; throws BackendError for fp16 texels
// with exact interpolation (which reads fp32 rows).
CudaBackendOptions cuda_backend_options(const CudaSettings& settings);

// The factory's entry points (backend_factory.cpp).
std::unique_ptr<Backend> make_cuda_backend(const CudaSettings& settings);
std::string cuda_unavailable_reason_impl(int device);

}  // namespace slicestream
