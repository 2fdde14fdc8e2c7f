#include "kernels/cuda/preprocessor.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cpu/preprocess_cpu.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/expr_device_evaluate.cuh"
#include "kernels/expr/preprocess_expression.hpp"

namespace slicestream::cuda {
namespace {

// The fused pass for one pixel type and mode: the expression cpu::preprocess_rows evaluates too
// (kernels/expr/preprocess_expression.hpp), here evaluated by one device kernel.
template <class Pixel, bool kLinear, bool kWeighted>
KernelLaunch preprocess_typed(const Pixel* raw, const float* dark_table,
                              const float* inv_gain_table, DetectorShape shape,
                              const PreprocessParams& params, const CosineWeight& cosine,
                              float* out, unsigned long long* counts) {
  const auto e = expr::preprocess_expression<kLinear, kWeighted>(raw, dark_table, inv_gain_table,
                                                                 params.min_transmission, cosine);
  return assign_2d_launch(out, e.result, expr::Extent2D{shape.rows, shape.cols}, counts,
                          e.non_finite, e.clamped_low);
}

template <class Pixel>
KernelLaunch preprocess_pixels(const void* raw, const float* dark, const float* inv_gain,
                               DetectorShape shape, const PreprocessParams& params,
                               const CosineWeight& cosine, float* out, unsigned long long* counts) {
  const Pixel* pixels = static_cast<const Pixel*>(raw);
  if (params.already_linear) {
    if (cosine.enabled) {
      return preprocess_typed<Pixel, true, true>(pixels, dark, inv_gain, shape, params, cosine, out,
                                                 counts);
    }
    return preprocess_typed<Pixel, true, false>(pixels, dark, inv_gain, shape, params, cosine, out,
                                                counts);
  }
  if (cosine.enabled) {
    return preprocess_typed<Pixel, false, true>(pixels, dark, inv_gain, shape, params, cosine, out,
                                                counts);
  }
  return preprocess_typed<Pixel, false, false>(pixels, dark, inv_gain, shape, params, cosine, out,
                                               counts);
}

}  // namespace

std::size_t Preprocessor::device_bytes(DetectorShape shape) {
  return shape.pixels() * (sizeof(std::uint32_t) + 2 * sizeof(float)) +
         2 * kCountRing * sizeof(unsigned long long);
}

Preprocessor::Preprocessor(DetectorShape shape, cudaStream_t stream, bool use_graph)
    : shape_(shape),
      raw_(shape.pixels() * sizeof(std::uint32_t)),
      dark_(shape.pixels()),
      inv_gain_(shape.pixels()),
      counts_(2 * kCountRing),
      counts_host_(2 * kCountRing),
      ring_(
          use_graph ? std::max<std::size_t>(raw_.bytes(), 1) : PinnedUploadRing::kDefaultChunkBytes,
          use_graph ? 2 : PinnedUploadRing::kDefaultChunks) {
  if (use_graph) graph_ = std::make_unique<GraphReplayer>();
  SLICESTREAM_CUDA_CHECK(cudaMemsetAsync(counts_.data(), 0, counts_.bytes(), stream));
  set_calibration({}, {}, stream);
}

void Preprocessor::set_calibration(const std::vector<float>& dark, const std::vector<float>& flat,
                                   cudaStream_t stream) {
  const cpu::PreprocessTables tables = cpu::make_preprocess_tables(shape_, dark, flat);
  // Ordered after earlier passes on `stream` that still read the old tables.
  SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(dark_.data(), tables.dark.data(),
                                         tables.dark.size() * sizeof(float), cudaMemcpyHostToDevice,
                                         stream));
  SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(inv_gain_.data(), tables.inv_gain.data(),
                                         tables.inv_gain.size() * sizeof(float),
                                         cudaMemcpyHostToDevice, stream));
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));  // `tables` dies on return
}

void Preprocessor::run(const FrameView& raw, const PreprocessParams& params,
                       const CosineWeight& cosine, float* out, cudaStream_t stream) {
  if (raw.shape != shape_) {
    throw CudaError("frame shape " + std::to_string(raw.shape.rows) + " x " +
                    std::to_string(raw.shape.cols) + " differs from the scan's detector " +
                    std::to_string(shape_.rows) + " x " + std::to_string(shape_.cols));
  }
  if (raw.data == nullptr || out == nullptr) {
    throw CudaError("preprocess needs input and output buffers");
  }
  if (!params.already_linear &&
      !(params.min_transmission > 0.0f && std::isfinite(params.min_transmission))) {
    throw CudaError("min_transmission must be a positive finite number");
  }
  if (pending_ == kCountRing) {
    std::vector<PreprocessCounters> ring = take_counts(stream);
    taken_.insert(taken_.end(), ring.begin(), ring.end());
  }
  unsigned long long* counts = counts_.data() + 2 * static_cast<std::size_t>(next_);
  LaunchSequence sequence;
  if (graph_) {
    // One copy from a frame-sized pinned chunk, so that the upload is one graph node.
    const void* staged = ring_.stage(raw.data, raw.bytes());
    sequence.add_copy(raw_.data(), staged, raw.bytes(), cudaMemcpyHostToDevice);
    append_device_work(raw, params, cosine, out, counts, sequence);
    graph_->launch(sequence, stream);
    ring_.staged_read_enqueued(stream);
  } else {
    ring_.upload(raw.data, raw_.data(), raw.bytes(), stream);
    append_device_work(raw, params, cosine, out, counts, sequence);
    sequence.enqueue(stream);
  }
  next_ = (next_ + 1) % kCountRing;
  ++pending_;
}

std::vector<PreprocessCounters> Preprocessor::take_counts(cudaStream_t stream) {
  std::vector<PreprocessCounters> result = std::move(taken_);
  taken_.clear();
  if (pending_ == 0) return result;
  // The whole ring (1 KiB) in one copy, then zeroed for the frames to come.
  SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(counts_host_.data(), counts_.data(), counts_.bytes(),
                                         cudaMemcpyDeviceToHost, stream));
  SLICESTREAM_CUDA_CHECK(cudaMemsetAsync(counts_.data(), 0, counts_.bytes(), stream));
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const int first = (next_ - pending_ + kCountRing) % kCountRing;
  for (int k = 0; k < pending_; ++k) {
    const std::size_t entry = 2 * static_cast<std::size_t>((first + k) % kCountRing);
    PreprocessCounters c;
    c.non_finite = counts_host_[entry];
    c.clamped_low = counts_host_[entry + 1];
    result.push_back(c);
  }
  pending_ = 0;
  return result;
}

void Preprocessor::append_device_work(const FrameView& raw, const PreprocessParams& params,
                                      const CosineWeight& cosine, float* out,
                                      unsigned long long* counts, LaunchSequence& sequence) {
  switch (raw.type) {
    case PixelType::kUint16:
      sequence.add(preprocess_pixels<std::uint16_t>(raw_.data(), dark_.data(), inv_gain_.data(),
                                                    shape_, params, cosine, out, counts));
      break;
    case PixelType::kUint32:
      sequence.add(preprocess_pixels<std::uint32_t>(raw_.data(), dark_.data(), inv_gain_.data(),
                                                    shape_, params, cosine, out, counts));
      break;
    case PixelType::kFloat32:
      sequence.add(preprocess_pixels<float>(raw_.data(), dark_.data(), inv_gain_.data(), shape_,
                                            params, cosine, out, counts));
      break;
    default:
      throw CudaError("unknown pixel type");
  }
}

}  // namespace slicestream::cuda
