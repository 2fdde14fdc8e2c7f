// The compute backend: one interface, chosen once at start-up (CpuBackend or CudaBackend).
//
// Stages never know which backend runs. Data stays where the backend computes: a projection
// travels as a backend-owned ProjectionBuffer from preprocess to filter to the store, and
// reconstructed values live in backend-owned ReconTargets until read_target copies them out.
// Threading contract: preprocess() is called from the preprocess stage thread, filter() from the
// filter stage thread, everything else from the reconstruct stage thread; begin_scan/end_scan and
// set_* only while the stages are idle between scans or from the reconstruct thread as noted.
// read_rows() and take_preprocess_counts() run on the preprocess thread; slice refiners
// (create_refiner) live on the pipeline's refinement worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/filter_config.hpp"
#include "kernels/frame_view.hpp"
#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "kernels/preprocess_params.hpp"
#include "kernels/projection_map.hpp"
#include "pipeline/backend/backend_options.hpp"
#include "pipeline/backend/memory_budget.hpp"
#include "pipeline/backend/refinement_settings.hpp"
#include "pipeline/backend/refinement_setup.hpp"
#include "pipeline/backend/target_readback.hpp"

namespace slicestream {

// A failure of the backend (out of memory, CUDA error, a scan that does not fit). Stages catch it
// at their boundary, log, count and report it; the server keeps running.
class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ScanSetup {
  ScanGeometry geometry;  // geometry.vectors: one per window slot (their count is the window)
  PixelType pixel_type = PixelType::kUint16;
  PreprocessParams preprocess;
  FilterConfig filter;
  // The most projections the pipeline holds outside the store at once (queues and stages), for
  // the up-front memory estimate.
  std::size_t projections_in_flight = 0;
  // The longest batch of store updates fused into one pass (PipelineConfig::max_projection_batch;
  // replace_projections splits longer ones). The CUDA backend keeps a scratch layer per update.
  int max_projection_batch = 8;
};

struct BackendInfo {
  std::string name;    // "cpu" or "cuda"
  std::string device;  // CPU model / GPU name
  int threads = 1;     // CPU worker threads
  std::size_t memory_total_bytes = 0;
  std::size_t memory_used_by_scan_bytes = 0;      // store + buffers + targets, computed up front
  std::size_t memory_used_by_refiners_bytes = 0;  // slice refiners: matrices and workspaces
};

// One projection on its way through preprocess and filter.
class ProjectionBuffer {
 public:
  virtual ~ProjectionBuffer() = default;
};

// Reconstructed values on a GridSpec (a slice, or the preview volume).
class ReconTarget {
 public:
  explicit ReconTarget(const GridSpec& grid) : grid_(grid) {}
  virtual ~ReconTarget() = default;
  const GridSpec& grid() const { return grid_; }

 private:
  GridSpec grid_;
};

// One projection for the store and its target lists (Backend::replace_projections).
struct ProjectionUpdate {
  int slot = 0;
  ProjectionMap map{};
  std::unique_ptr<ProjectionBuffer> projection;
  std::vector<ReconTarget*> live;
  std::vector<ReconTarget*> accumulate;
  bool applied = false;  // set by the backend once the update has taken effect
};

struct RefinementResult {
  double residual_before = 0;  // ||A x0 - b|| / ||b|| of the start value (the FBP slice)
  double residual_after = 0;   // ||A x - b|| / ||b|| of the result
  int iterations = 0;          // iterations run
  RefinementSummary summary;   // method, regulariser, why it stopped, noise level
};

// The distance-driven system matrix A of one RefinementSetup on a backend, and the refinement
// solvers on it (refinement_settings.hpp: FISTA with bounds and a regulariser, or CGLS). Slices
// are grid.pixels() floats (column fastest, row 0 at the bottom, as SliceImage), sinograms
// angles x bins floats (projection-major) of line integrals in mm; A holds chord lengths in mm,
// so A x of a slice in attenuation per mm is comparable with b. Used from one thread at a time;
// independent of the scan state (it keeps working after end_scan).
class SliceRefiner {
 public:
  virtual ~SliceRefiner() = default;
  virtual std::string solver() const = 0;  // e.g. "cpu csr fp32"
  virtual std::size_t matrix_bytes() const = 0;
  // Everything it holds (matrix, solver workspace, vectors): what it charges to its backend's
  // memory budget.
  virtual std::size_t memory_bytes() const = 0;
  // ||A x - b|| / ||b|| (||A x|| when b is zero).
  virtual double residual(const float* slice, const float* sinogram) = 0;
  // The request's refinement from x0 (x_out may equal x0); max_iterations 0 measures the residual
  // of x0 only.
  virtual RefinementResult refine(const float* x0, const float* sinogram,
                                  const RefinementRequest& request, float* x_out) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendInfo info() const = 0;

  // Allocates the projection store (one slot per geometry vector, all empty) and buffers.
  // Throws BackendError with a clear message when the scan does not fit.
  virtual void begin_scan(const ScanSetup& setup) = 0;
  virtual void end_scan() = 0;
  // Averaged darks and flats (rows x cols); an empty vector means "none were taken".
  virtual void set_calibration(const std::vector<float>& dark, const std::vector<float>& flat) = 0;
  // New filter settings apply to projections filtered from now on (reconstruct thread).
  virtual void set_filter(const FilterConfig& config) = 0;

  // Preprocess stage: raw frame to corrected, linearised, FDK-weighted projection. `vector` is
  // where it was taken (the cosine weights depend on it). Its guarded-pixel counts wait for
  // take_preprocess_counts.
  virtual std::unique_ptr<ProjectionBuffer> preprocess(const FrameView& raw,
                                                       const ProjectionVector& vector) = 0;
  // Preprocess stage: the guard counts of every preprocess() call since the last take, one entry
  // per successful call, in order (at most PendingCounts::kMaxEntries; later frames add to the
  // last entry). The CUDA backend counts on the device and reads the counts of many frames back
  // at once here, so that the stage calls it once per batch of frames, not per frame.
  virtual std::vector<PreprocessCounters> take_preprocess_counts() = 0;
  // Filter stage: ramp filter in place.
  virtual void filter(ProjectionBuffer& projection) = 0;
  // Preprocess stage, after preprocess(): detector rows [row_begin, row_begin + count) of the
  // preprocessed, not yet filtered projection (the line integrals slice refinement fits) into
  // `host` (count x cols floats). Called on the preprocess thread, where the CUDA backend's
  // projection was just enqueued, so the copy waits for nothing else; the filter stream stays
  // asynchronous.
  virtual void read_rows(ProjectionBuffer& projection, int row_begin, int count, float* host) = 0;

  // --- reconstruct stage ---
  virtual std::unique_ptr<ReconTarget> create_target(const GridSpec& grid) = 0;

  // Stores `projection` in `slot` (taken with `map`) and updates the targets in one go:
  //   every t in live:       t += scale * (BP_map(new) - BP_old_map(old))   (old = 0 if empty)
  //   every t in accumulate: t += scale * BP_map(new)
  // When map equals the slot's previous map the backend may backproject (new - old) once.
  // One update of replace_projections; throws what it throws.
  void replace_projection(int slot, const ProjectionMap& map,
                          std::unique_ptr<ProjectionBuffer> projection,
                          const std::vector<ReconTarget*>& live,
                          const std::vector<ReconTarget*>& accumulate, float scale);

  // Store updates in order, each as replace_projection describes with its own target lists (a
  // slot may appear more than once): exactly the effect of the updates one by one. Both backends
  // execute the batch as plan_updates (update_plan.hpp) lays it out: runs of distinct slots, each
  // fused into one pass in which every target is read and written once, which is the floor of
  // the incremental update. Results equal the one-by-one updates up to float rounding (sums in
  // another order).
  // On failure it throws BackendError: updates with `applied` set took effect; of the others,
  // one whose `projection` is still set was not attempted (the caller may submit it again) and
  // one whose projection was taken is lost. Live targets may then be partly updated.
  virtual void replace_projections(std::vector<ProjectionUpdate>& updates, float scale) = 0;
  // Filtered values the store clamped to the range of its texels since the scan began (the CUDA
  // backend's fp16 texels: +-65504); 0 where the store keeps fp32. Counted as the updates run on
  // the device, so it may trail the updates just enqueued.
  virtual std::uint64_t store_values_clamped() const { return 0; }

  // Planes [plane_begin, plane_end) of target: (accumulate ? target : 0) + scale * sum over the
  // given slots of BP(stored projection). Empty slots contribute nothing.
  virtual void backproject_store(const std::vector<int>& slots, ReconTarget& target, float scale,
                                 bool accumulate, int plane_begin, int plane_end) = 0;

  // Replaces the maps of every stored slot (centre-of-rotation change): the stored filtered data
  // stays, later backprojections use the new maps. `maps` has one entry per slot.
  virtual void set_slot_maps(const std::vector<ProjectionMap>& maps) = 0;

  virtual void clear_target(ReconTarget& target) = 0;
  virtual void copy_target(const ReconTarget& from, ReconTarget& to) = 0;
  // Blocks until the values are in `host` (grid().points() floats).
  virtual void read_target(const ReconTarget& target, float* host) = 0;
  // Starts copying the target's current values to the host and returns without waiting where the
  // backend can (the CUDA backend: into pinned memory, ordered after the work enqueued so far);
  // the readback may be waited for on any thread. The default copies synchronously.
  virtual std::unique_ptr<TargetReadback> read_target_async(const ReconTarget& target);

  // --- refinement worker thread (not a stage thread) ---
  // Builds the system matrix of `setup` (seconds for large slices, hence off the stage threads)
  // and a CGLS solver on this backend. Throws BackendError when it does not fit or is invalid.
  virtual std::unique_ptr<SliceRefiner> create_refiner(const RefinementSetup& setup) = 0;
  // Any thread: empty when a refiner of `setup` fits in the memory the backend has left now
  // (its estimate against the budget, which counts the scan, the targets and the refiners that
  // exist), else why not, in words. create_refiner checks again.
  virtual std::string refiner_memory_problem(const RefinementSetup& setup) const = 0;

  // --- any thread ---
  // The host memory budget (memory_budget.hpp): the CPU backend charges its scan, targets and
  // refiners to it; the pipeline and the server charge what clients make them hold.
  const SharedMemoryBudget& host_memory() const { return host_memory_; }
  // Host memory a target of `grid` takes once built (what a slice reserves before a scan gives
  // it a target): all of it on the CPU backend, none on a device backend.
  virtual std::size_t target_host_bytes(const GridSpec& grid) const {
    (void)grid;
    return 0;
  }

 protected:
  SharedMemoryBudget host_memory_ = std::make_shared<MemoryBudget>();
};

// Creates the backend once at start-up. kAuto takes CUDA when a usable GPU exists.
// Throws BackendError when kCuda is requested and not available (with the reason), or when an
// option is invalid.
std::unique_ptr<Backend> make_backend(BackendKind kind, const BackendOptions& options = {});
// Empty when a CUDA backend can run on `device` here, else why not (not built, no device, driver
// error).
std::string cuda_unavailable_reason(int device = 0);

}  // namespace slicestream
