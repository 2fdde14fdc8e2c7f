// CUDA twin of cpu::RampFilter: every row of a projection zero-padded to
// padded_filter_width(cols) (data first, zeros after, as on the CPU), one batched cuFFT R2C over
// all rows, multiplication by ramp_filter_response's real gains, one batched C2R, and the first
// cols values written back. Plans and buffers are made once per detector shape.
//
// With graphs on, the whole sequence (pad, R2C, gains, C2R, unpad; cuFFT supports stream
// capture) is one CUDA graph launch per projection; only the pad and unpad kernels' projection
// pointer changes between launches (launch_sequence.hpp).
//
// FilteredRows::kPadded leaves out the unpad pass: the inverse transform writes every padded row
// straight into the projection's buffer (rows x padded_width floats), and whoever reads the
// projection next crops it at that pitch (the projection store's replacement pass, which reads
// the filtered values once in any case). The C2R output pointer then changes per projection, and
// cuFFT's captured work cannot be re-pointed, so graph replay keeps one graph per projection
// buffer (graph_buffers at construction: the pool of buffers the caller cycles through).
#pragma once

#include <cuda_runtime.h>
#include <cufft.h>

#include <memory>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/filter_config.hpp"
#include "kernels/frame_view.hpp"

namespace slicestream::cuda {

// Owns one cuFFT plan (destroyed even when a later constructor step throws).
class CufftPlan {
 public:
  CufftPlan() = default;
  ~CufftPlan() {
    if (valid_) cufftDestroy(handle_);
  }
  CufftPlan(const CufftPlan&) = delete;
  CufftPlan& operator=(const CufftPlan&) = delete;
  // Batched 1D transforms of `n` points, rows `in_stride` / `out_stride` elements apart.
  void make(int n, int in_stride, int out_stride, cufftType type, int batch);
  cufftHandle get() const { return handle_; }

 private:
  cufftHandle handle_ = 0;
  bool valid_ = false;
};

// Where filter() leaves the filtered rows.
enum class FilteredRows {
  kDense,   // in place: rows x cols floats, where the projection was
  kPadded,  // rows x padded_width floats: row r's filtered values are its first cols
};

class RampFilterCuda {
 public:
  // `graph_buffers`: how many projection buffers kPadded filtering cycles through (graphs kept).
  RampFilterCuda(DetectorShape shape, const FilterConfig& config, bool use_graph = false,
                 std::size_t graph_buffers = 1);
  RampFilterCuda(const RampFilterCuda&) = delete;
  RampFilterCuda& operator=(const RampFilterCuda&) = delete;

  // Device memory it takes (padded rows, spectrum, gains, cuFFT work areas), for the budget.
  static std::size_t device_bytes(DetectorShape shape);

  // New gains for the projections filtered from now on; the upload is ordered on `stream`.
  void set_config(const FilterConfig& config, cudaStream_t stream);

  // Filters `projection` (device, rows x cols floats on entry) on `stream`, leaving the result as
  // `rows` says; the buffer must hold buffer_floats(rows) floats (one graph launch with graphs
  // on, else step by step).
  void filter(float* projection, cudaStream_t stream, FilteredRows rows = FilteredRows::kDense);
  // The per-projection work as a launch sequence (what filter() runs).
  LaunchSequence sequence(float* projection, FilteredRows rows = FilteredRows::kDense);

  // Floats apart of consecutive filtered rows, and the buffer size each layout needs.
  static int row_pitch(DetectorShape shape, FilteredRows rows);
  static std::size_t buffer_floats(DetectorShape shape, FilteredRows rows);

  DetectorShape shape() const { return shape_; }
  int padded_width() const { return padded_width_; }
  const GraphReplayer* graph() const { return graph_.get(); }  // null without graphs

 private:
  DetectorShape shape_;
  int padded_width_;
  int bins_;
  DeviceBuffer<float> padded_;     // rows x padded_width
  DeviceBuffer<float2> spectrum_;  // rows x bins
  DeviceBuffer<float> gains_;      // bins
  PinnedBuffer<float> gains_host_;
  CufftPlan forward_;
  CufftPlan inverse_;
  std::unique_ptr<GraphReplayer> graph_;
};

}  // namespace slicestream::cuda
