// Voxel-driven backprojection on the GPU: any GridSpec (slices of any
// orientation, preview volumes), cone (weight / den^2) and parallel beam, every target of a call
// in one launch where the kernel's parameter space allows. The CPU twin is
// cpu::backproject_rows; both evaluate, for every grid point X and source p,
//   target(X) (+)= sum_p p.scale * p.map.weight * bilinear(p, col(X), row(X)) / den(X)^2
// with samples outside the detector reading 0 and points behind the source contributing nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/cuda/projection_texture_store.hpp"
#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "kernels/projection_map.hpp"

namespace slicestream::cuda {

// How a bilinear sample is taken, and so which store the sources come from.
enum class BackprojectInterpolation {
  // One hardware-filtered fetch from the store's layered texture (fp32 or fp16 texels). The
  // filter's weights have 8 fractional bits: a few 1e-4 of the slice from the fp32 CPU twin, far
  // below the reconstruction's own error against the object (docs/performance.md). From a store
  // of mirrored fp16 pairs (TextureRef::mirrored), one fetch serves a point and its mirror image
  // wherever every source of a target maps them onto mirrored detector rows (a vertical slice
  // centred on the source plane of a circular scan); other points fetch one value. A target on
  // the detector's centre line (maps_onto_centre_line) is sampled from the store's centre lines
  // in fp32 instead.
  kTexture,
  // Four loads from the store's linear fp32 rows through L1 and fp32 weights: the CPU twin to
  // rounding.
  kExact,
};
const char* to_string(BackprojectInterpolation interpolation);

enum class TargetInterleaving { kAutomatic, kAlways, kNever };
const char* to_string(TargetInterleaving interleaving);

// Where a launch's blocks of quarter-turn pairs (pairs_quarter_turns) run: spread evenly among the
// other targets' blocks, so that every multiprocessor holds both kinds at once (the pairs' blocks
// are limited by arithmetic and loads, the texture targets' by texture fetches), or all first.
enum class QuarterTurnPlacement { kSpread, kFirst };
const char* to_string(QuarterTurnPlacement placement);

struct BackprojectTuning {
  int block_x = 32;
  int block_y = 4;
  // Grid points per thread along the grid's y axis: 1, 2, 4, 8 or 16; 0 picks the largest of
  // 1..8 (1..4 when a target is served by mirrored pairs) that still gives every multiprocessor
  // six blocks (the best choice in bench/cuda's tuning search, docs/performance.md).
  int points_per_thread = 0;
  BackprojectInterpolation interpolation = BackprojectInterpolation::kTexture;
  // Whether targets of equal tiling in one launch take turns block by block, so that blocks
  // running at the same time cover the same rows of every slice and read the same detector rows.
  // Automatic: where a launch's sources hold more detector values than the L2 cache holds fp16
  // values, so that the rows the blocks share would not stay in L2 otherwise (a window that fits
  // in L2 gains nothing: docs/performance.md).
  TargetInterleaving interleave = TargetInterleaving::kAutomatic;
  QuarterTurnPlacement quarter_turns = QuarterTurnPlacement::kSpread;
  // Whether a call's launches after its first start while the previous one's last blocks still
  // run (KernelLaunch::set_start_early), instead of after it has finished.
  bool start_launches_early = true;
};
// Empty when valid, else why not.
std::string validate(const BackprojectTuning& tuning);

// One projection to backproject and how it maps; `scale` multiplies map.weight (negative to
// remove a projection's contribution).
struct BackprojectSource {
  ProjectionMap map;
  TextureRef texture;
  float scale = 1.0f;
};

// One target and what goes into planes [plane_begin, plane_end) of it.
struct BackprojectJob {
  GridSpec grid;
  float* data = nullptr;  // device, grid.points() floats
  int plane_begin = 0;
  int plane_end = 1;
  bool accumulate = false;  // false: planes := sum; true: planes += sum
  std::vector<BackprojectSource> sources;
};

// Whether every source of `job` maps rows j and height - 1 - j of its grid (each plane) onto the
// same column and mirrored detector rows (row and rows - 1 - row), to a thousandth of a pixel:
// then, from a store of mirrored fp16 pairs, one fetch serves both rows (the backprojector pairs
// them). True for vertical slices centred on the source plane of a circular scan whose detector
// is centred on that plane.
bool pairs_mirrored_rows(const BackprojectJob& job, DetectorShape detector);

// Whether every source of `job` maps every point of its planes onto the detector's centre row
// (rows - 1) / 2, to a thousandth of a pixel: then, with texture interpolation from a store that
// keeps centre lines (TextureRef::centre_line), the backprojector samples the lines in fp32, one
// 8-byte load per sample, instead of fetching through the texture unit. True for the axial slice
// through the source plane of a circular scan whose detector is centred on that plane (cone and
// parallel beam), whatever its size or in-plane rotation.
bool maps_onto_centre_line(const BackprojectJob& job, DetectorShape detector);

// What the automatic tuning resolves against: the device the launches run on.
struct BackprojectDevice {
  int multiprocessors = 1;
  std::size_t l2_bytes = 0;
};
BackprojectDevice current_backproject_device();  // the calling thread's device; throws CudaError

// Whether a job on the centre line (maps_onto_centre_line) can read its sources' centre lines in
// pairs a quarter turn apart: one column evaluation per point serves both sources, each point taken
// with its three images under a quarter turn of the slice about its centre. True for a square slice
// of even side centred on the axis of a circular scan whose window holds N equally spaced
// projections over 180 degrees (N even; k pairs with k + N/2) or 360 degrees (N a multiple of 4; k
// with k + N/4), their lines equally far apart in one array (the store's slots). The backprojector
// takes them in cone beam, in the launches of full recomputes (many sources).
bool pairs_quarter_turns(const BackprojectJob& job, DetectorShape detector);

class Backprojector {
 public:
  // Throws CudaError for an invalid tuning (validate). A cheap object: benchmarks and tests
  // construct one per tuning. Without `device`, the calling thread's current device.
  Backprojector(BeamKind beam, DetectorShape detector, const BackprojectTuning& tuning = {});
  // For a given device: the launches are prepared without querying one (host-side benchmarks and
  // tests of the tuning's resolution on machines without a GPU).
  Backprojector(BeamKind beam, DetectorShape detector, const BackprojectTuning& tuning,
                BackprojectDevice device);

  const BackprojectTuning& tuning() const { return tuning_; }
  // The tuning a call with these jobs runs with (points_per_thread and interleave resolved).
  BackprojectTuning resolved_tuning(const std::vector<BackprojectJob>& jobs) const;

  // Enqueues the jobs on `stream`. Jobs with no sources still write (or keep) their planes.
  // Returns the number of kernel launches used.
  int run(const std::vector<BackprojectJob>& jobs, cudaStream_t stream) const;
  // The launches run() would enqueue, appended to `sequence` (graph replay); returns their count.
  int append(const std::vector<BackprojectJob>& jobs, LaunchSequence& sequence) const;

 private:
  BeamKind beam_;
  DetectorShape detector_;
  BackprojectTuning tuning_;
  BackprojectDevice device_;
};

}  // namespace slicestream::cuda
