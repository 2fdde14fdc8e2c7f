// Settings of the pipeline (server/ fills them from flags and the config file).
#pragma once

#include <cstddef>
#include <string>

#include "pipeline/messages/command.hpp"

namespace slicestream {

// Bounds on slice refinement (SetRefinement); requests beyond them are refused.
struct RefinementLimits {
  int max_iterations = 200;  // CGLS iterations per refinement
  int max_slices = 4;        // slices refined at once
  // Estimated fp32 system matrix of one slice (refinement_setup.hpp): a 512 x 512 slice with
  // 360 projections of 1-pixel bins needs about 1.6 GiB (720 projections: 3.2 GiB).
  std::size_t max_matrix_bytes = std::size_t{2} << 30;
  // Every live slice that can be checked has its data-consistency residual measured at most this
  // often (seconds; only when new projections arrived), without a SetRefinement; 0: off. The
  // matrices of these automatic checks together stay within max_matrix_bytes (estimated).
  double residual_interval_s = 3;
};

struct PipelineConfig {
  Parameters parameters;   // initial run-time parameters (SetParameters changes them)
  int queue_depth = 64;    // per stage queue; a full queue blocks the stage before it
  int preview_size = 128;  // preview volume edge in voxels (0 disables the preview)
  // Sliding window: rebuild every slice from scratch once every this many rotations (bounds float
  // drift of the +new - old updates); the rebuild is spread over one rotation's frames.
  int refresh_rotations = 4;
  int max_slices = 64;
  // Edge in pixels of the three default slices placed when a scan starts and no client has set
  // slices; 0: the detector's column count.
  int default_slice_size = 0;
  int max_slice_side = 8192;  // width and height limit for SetSlice / GetSlice
  // Projections waiting together in the reconstruct queue are handed to the backend as one batch
  // of at most this many (one pass over the slices per batch; the CUDA backend keeps a scratch
  // layer per projection of a batch); 1 disables. The only batching setting.
  int max_projection_batch = 8;
  // A running scan that receives no message (frame, ScanEnd) for this many seconds ends with the
  // reason "no data for N s" (a scan_timeout warning, its SCAN_ENDED event, GetStatus); 0: never.
  double scan_timeout_s = 0;
  RefinementLimits refinement;
};

inline constexpr int kMaxQueueDepth = 100000;
inline constexpr int kMaxPreviewSize = 1024;
inline constexpr int kMaxProjectionBatch = 1024;

// Empty when every setting lies in its range, else the first problem, naming the setting (the
// Pipeline refuses such a config; the server refuses it at start-up).
std::string pipeline_config_problem(const PipelineConfig& config);

}  // namespace slicestream
