#include "kernels/cuda/preprocessor.hpp"

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
void preprocess_typed(const Pixel* raw, const float* dark_table, const float* inv_gain_table,
                      DetectorShape shape, const PreprocessParams& params,
                      const CosineWeight& cosine, float* out, unsigned long long* counts,
                      cudaStream_t stream) {
  const auto e = expr::preprocess_expression<kLinear, kWeighted>(raw, dark_table, inv_gain_table,
                                                                 params.min_transmission, cosine);
  assign_2d(out, e.result, expr::Extent2D{shape.rows, shape.cols}, counts, stream, e.non_finite,
            e.clamped_low);
}

template <class Pixel>
void preprocess_pixels(const void* raw, const float* dark, const float* inv_gain,
                       DetectorShape shape, const PreprocessParams& params,
                       const CosineWeight& cosine, float* out, unsigned long long* counts,
                       cudaStream_t stream) {
  const Pixel* pixels = static_cast<const Pixel*>(raw);
  if (params.already_linear) {
    if (cosine.enabled) {
      preprocess_typed<Pixel, true, true>(pixels, dark, inv_gain, shape, params, cosine, out,
                                          counts, stream);
    } else {
      preprocess_typed<Pixel, true, false>(pixels, dark, inv_gain, shape, params, cosine, out,
                                           counts, stream);
    }
  } else if (cosine.enabled) {
    preprocess_typed<Pixel, false, true>(pixels, dark, inv_gain, shape, params, cosine, out, counts,
                                         stream);
  } else {
    preprocess_typed<Pixel, false, false>(pixels, dark, inv_gain, shape, params, cosine, out,
                                          counts, stream);
  }
}

}  // namespace

std::size_t Preprocessor::device_bytes(DetectorShape shape) {
  return shape.pixels() * (sizeof(std::uint32_t) + 2 * sizeof(float)) +
         2 * sizeof(unsigned long long);
}

Preprocessor::Preprocessor(DetectorShape shape, cudaStream_t stream)
    : shape_(shape),
      raw_(shape.pixels() * sizeof(std::uint32_t)),
      dark_(shape.pixels()),
      inv_gain_(shape.pixels()),
      counts_(2),
      counts_host_(2) {
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
                       const CosineWeight& cosine, float* out, cudaStream_t stream,
                       PreprocessCounters* counters) {
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
  ring_.upload(raw.data, raw_.data(), raw.bytes(), stream);
  SLICESTREAM_CUDA_CHECK(
      cudaMemsetAsync(counts_.data(), 0, 2 * sizeof(unsigned long long), stream));
  switch (raw.type) {
    case PixelType::kUint16:
      preprocess_pixels<std::uint16_t>(raw_.data(), dark_.data(), inv_gain_.data(), shape_, params,
                                       cosine, out, counts_.data(), stream);
      break;
    case PixelType::kUint32:
      preprocess_pixels<std::uint32_t>(raw_.data(), dark_.data(), inv_gain_.data(), shape_, params,
                                       cosine, out, counts_.data(), stream);
      break;
    case PixelType::kFloat32:
      preprocess_pixels<float>(raw_.data(), dark_.data(), inv_gain_.data(), shape_, params, cosine,
                               out, counts_.data(), stream);
      break;
    default:
      throw CudaError("unknown pixel type");
  }
  if (counters != nullptr) {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(counts_host_.data(), counts_.data(),
                                           2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                           stream));
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
    counters->non_finite += counts_host_[0];
    counters->clamped_low += counts_host_[1];
  }
}

}  // namespace slicestream::cuda
