#include "kernels/cuda/ramp_filter_cuda.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"

namespace slicestream::cuda {
namespace {

// padded[r][x] = x < cols ? projection[r][x] : 0
__global__ void pad_rows_kernel(const float* __restrict__ projection, float* __restrict__ padded,
                                int rows, int cols, int padded_width) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int r = static_cast<int>(blockIdx.y);
  if (x >= padded_width || r >= rows) return;
  const std::size_t row = static_cast<std::size_t>(r);
  padded[row * static_cast<std::size_t>(padded_width) + static_cast<std::size_t>(x)] =
      x < cols ? projection[row * static_cast<std::size_t>(cols) + static_cast<std::size_t>(x)]
               : 0.0f;
}

// The gains are real: scale real and imaginary parts alike.
__global__ void apply_gains_kernel(float2* __restrict__ spectrum, const float* __restrict__ gains,
                                   int rows, int bins) {
  const int k = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int r = static_cast<int>(blockIdx.y);
  if (k >= bins || r >= rows) return;
  float2& value = spectrum[static_cast<std::size_t>(r) * static_cast<std::size_t>(bins) +
                           static_cast<std::size_t>(k)];
  const float g = gains[k];
  value.x *= g;
  value.y *= g;
}

__global__ void unpad_rows_kernel(const float* __restrict__ padded, float* __restrict__ projection,
                                  int rows, int cols, int padded_width) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int r = static_cast<int>(blockIdx.y);
  if (x >= cols || r >= rows) return;
  const std::size_t row = static_cast<std::size_t>(r);
  projection[row * static_cast<std::size_t>(cols) + static_cast<std::size_t>(x)] =
      padded[row * static_cast<std::size_t>(padded_width) + static_cast<std::size_t>(x)];
}

constexpr unsigned kThreads = 256;

unsigned blocks_for(int count) {
  return static_cast<unsigned>((count + static_cast<int>(kThreads) - 1) /
                               static_cast<int>(kThreads));
}

}  // namespace

std::size_t RampFilterCuda::device_bytes(DetectorShape shape) {
  const std::size_t padded = static_cast<std::size_t>(padded_filter_width(shape.cols));
  const std::size_t bins = padded / 2 + 1;
  const std::size_t rows = static_cast<std::size_t>(shape.rows);
  // Buffers, plus cuFFT's work areas: one padded batch each for forward and inverse (a bound
  // on what cuFFT asks for batched 1D transforms of 7-smooth sizes, powers of two included).
  return rows * padded * sizeof(float) + rows * bins * sizeof(float2) + bins * sizeof(float) +
         2 * rows * bins * sizeof(float2);
}

int RampFilterCuda::row_pitch(DetectorShape shape, FilteredRows rows) {
  return rows == FilteredRows::kPadded ? padded_filter_width(shape.cols) : shape.cols;
}

std::size_t RampFilterCuda::buffer_floats(DetectorShape shape, FilteredRows rows) {
  return static_cast<std::size_t>(shape.rows) * static_cast<std::size_t>(row_pitch(shape, rows));
}

RampFilterCuda::RampFilterCuda(DetectorShape shape, const FilterConfig& config, bool use_graph,
                               std::size_t graph_buffers)
    : shape_(shape),
      padded_width_(padded_filter_width(shape.cols)),
      bins_(padded_width_ / 2 + 1),
      padded_(static_cast<std::size_t>(shape.rows) * static_cast<std::size_t>(padded_width_)),
      spectrum_(static_cast<std::size_t>(shape.rows) * static_cast<std::size_t>(bins_)),
      gains_(static_cast<std::size_t>(bins_)),
      gains_host_(static_cast<std::size_t>(bins_)) {
  if (shape.rows <= 0) throw CudaError("ramp filter needs a detector with rows");
  forward_.make(padded_width_, padded_width_, bins_, CUFFT_R2C, shape.rows);
  inverse_.make(padded_width_, bins_, padded_width_, CUFFT_C2R, shape.rows);
  set_config(config, nullptr);
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  // At least the replayer's default: the dense layout needs one graph, kPadded one per buffer.
  if (use_graph) graph_ = std::make_unique<GraphReplayer>(std::max<std::size_t>(8, graph_buffers));
}

void CufftPlan::make(int n, int in_stride, int out_stride, cufftType type, int batch) {
  int size[1] = {n};
  int in_embed[1] = {in_stride};
  int out_embed[1] = {out_stride};
  SLICESTREAM_CUFFT_CHECK(cufftPlanMany(&handle_, 1, size, in_embed, 1, in_stride, out_embed, 1,
                                        out_stride, type, batch));
  valid_ = true;
}

void RampFilterCuda::set_config(const FilterConfig& config, cudaStream_t stream) {
  const std::vector<float> gains = ramp_filter_response(padded_width_, config);
  // The pinned copy may still feed an earlier upload on `stream`: wait for it first.
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (int k = 0; k < bins_; ++k)
    gains_host_[static_cast<std::size_t>(k)] = gains[static_cast<std::size_t>(k)];
  SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(gains_.data(), gains_host_.data(), gains_.bytes(),
                                         cudaMemcpyHostToDevice, stream));
}

LaunchSequence RampFilterCuda::sequence(float* projection, FilteredRows filtered_rows) {
  const int rows = shape_.rows;
  const auto row_count = static_cast<unsigned>(rows);
  LaunchSequence seq;
  seq.add(KernelLaunch(&pad_rows_kernel, dim3(blocks_for(padded_width_), row_count), dim3(kThreads),
                       projection, padded_.data(), rows, shape_.cols, padded_width_));
  // The transforms work on the filter's own buffers: the same work for every projection.
  const cufftHandle forward = forward_.get();
  float* padded = padded_.data();
  auto* spectrum = reinterpret_cast<cufftComplex*>(spectrum_.data());
  seq.add_fixed(&forward_, [forward, padded, spectrum](cudaStream_t stream) {
    SLICESTREAM_CUFFT_CHECK(cufftSetStream(forward, stream));
    SLICESTREAM_CUFFT_CHECK(cufftExecR2C(forward, padded, spectrum));
  });
  seq.add(KernelLaunch(&apply_gains_kernel, dim3(blocks_for(bins_), row_count), dim3(kThreads),
                       spectrum_.data(), gains_.data(), rows, bins_));
  const cufftHandle inverse = inverse_.get();
  if (filtered_rows == FilteredRows::kPadded) {
    // The output pointer is the projection's: a different captured work per buffer (its key).
    seq.add_fixed(projection, [inverse, spectrum, projection](cudaStream_t stream) {
      SLICESTREAM_CUFFT_CHECK(cufftSetStream(inverse, stream));
      SLICESTREAM_CUFFT_CHECK(cufftExecC2R(inverse, spectrum, projection));
    });
    return seq;
  }
  seq.add_fixed(&inverse_, [inverse, padded, spectrum](cudaStream_t stream) {
    SLICESTREAM_CUFFT_CHECK(cufftSetStream(inverse, stream));
    SLICESTREAM_CUFFT_CHECK(cufftExecC2R(inverse, spectrum, padded));
  });
  seq.add(KernelLaunch(&unpad_rows_kernel, dim3(blocks_for(shape_.cols), row_count), dim3(kThreads),
                       padded_.data(), projection, rows, shape_.cols, padded_width_));
  return seq;
}

void RampFilterCuda::filter(float* projection, cudaStream_t stream, FilteredRows rows) {
  if (projection == nullptr) throw CudaError("ramp filter: no projection");
  const LaunchSequence seq = sequence(projection, rows);
  if (graph_) {
    graph_->launch(seq, stream);
  } else {
    seq.enqueue(stream);
  }
}

}  // namespace slicestream::cuda
