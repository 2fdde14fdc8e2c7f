// CUDA twin of cpu::preprocess_rows: a raw frame (uint16, uint32 or float32) is
// staged through a pinned ring and uploaded asynchronously, then one fused kernel, built from the
// same kernels/expr expression as the CPU pass, does dark and flat correction, guards, -log and
// the FDK cosine weight, counting guarded pixels in the same pass.
//
// The counts of each frame land in the next entry of a small ring on the device and are read back
// for many frames at once (take_counts), so that no frame waits for its own: the host enqueues a
// frame and returns.
//
// With graphs on, the per-frame work (one copy of the frame from a frame-sized pinned chunk and
// the fused kernel) is one CUDA graph launch whose copy source, output, counter entry and cosine
// weights are rewritten per frame (launch_sequence.hpp).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/cuda/pinned_upload_ring.hpp"
#include "kernels/frame_view.hpp"
#include "kernels/preprocess_params.hpp"
#include "kernels/projection_map.hpp"

namespace slicestream::cuda {

class Preprocessor {
 public:
  // Starts without calibration (dark 0, gain 1); uploads on `stream` and waits for it. With
  // `use_graph` every run() is one graph launch (see above); without, the steps are enqueued one
  // by one and frames are staged through 1 MiB pinned chunks.
  Preprocessor(DetectorShape shape, cudaStream_t stream, bool use_graph = false);

  // Device memory it takes (raw frame buffer, tables, counters), for the memory budget.
  static std::size_t device_bytes(DetectorShape shape);

  // Averaged darks and flats (empty: none taken), turned into tables exactly as on the CPU
  // (cpu::make_preprocess_tables) and uploaded on `stream`; returns when the upload is done.
  void set_calibration(const std::vector<float>& dark, const std::vector<float>& flat,
                       cudaStream_t stream);

  // Uploads `raw` and writes the preprocessed projection to `out` (device, rows x cols floats),
  // both on `stream`, and returns as soon as the work is enqueued. Its guard counts wait on the
  // device for take_counts (a full ring is read back first, one wait per kCountRing frames).
  void run(const FrameView& raw, const PreprocessParams& params, const CosineWeight& cosine,
           float* out, cudaStream_t stream);
  // The guard counts of every run() since the last call, in order; waits for the last of them
  // (everything enqueued on `stream` so far).
  std::vector<PreprocessCounters> take_counts(cudaStream_t stream);
  static constexpr int kCountRing = 64;

  DetectorShape shape() const { return shape_; }
  // The graph replayer (null without graphs): tests check that frames update one graph.
  const GraphReplayer* graph() const { return graph_.get(); }

 private:
  // The fused kernel, counting into `counts` (an entry of the ring, zero before).
  void append_device_work(const FrameView& raw, const PreprocessParams& params,
                          const CosineWeight& cosine, float* out, unsigned long long* counts,
                          LaunchSequence& sequence);

  DetectorShape shape_;
  DeviceBuffer<unsigned char> raw_;  // the largest pixel type
  DeviceBuffer<float> dark_;
  DeviceBuffer<float> inv_gain_;
  // kCountRing entries of (non_finite, clamped_low); entry next_ is the next frame's, the
  // pending_ before it wait to be read. Read entries are zeroed on the device again.
  DeviceBuffer<unsigned long long> counts_;
  PinnedBuffer<unsigned long long> counts_host_;
  int next_ = 0;
  int pending_ = 0;
  std::vector<PreprocessCounters> taken_;  // read back when the ring was full
  PinnedUploadRing ring_;  // 1 MiB chunks; with graphs two chunks of the largest frame
  std::unique_ptr<GraphReplayer> graph_;
};

}  // namespace slicestream::cuda
