#include "kernels/tensorcore/cuda/tensorcore_projector.hpp"

#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/expr_device_evaluate.cuh"
#include "kernels/expr/pass.hpp"
#include "kernels/tensorcore/cuda/projector_operand_kernels.cuh"
#include "kernels/tensorcore/cuda/tensorcore_projector_impl.hpp"
#include "kernels/tensorcore/operand_scaling.hpp"

namespace slicestream::tensorcore::cuda {

void TensorCoreProjector::Impl::prepare_scales(const float* input, long long rows, int slices,
                                               const float* max_abs, int columns,
                                               int per_slice_columns, int lo, cudaStream_t stream) {
  ensure(operand_scale, static_cast<std::size_t>(columns));
  ensure(column_scale, static_cast<std::size_t>(columns));
  const double* max_d = nullptr;
  if (max_abs == nullptr) {
    ensure(reduce, static_cast<std::size_t>(slices));
    ::slicestream::cuda::evaluate_pass(expr::fused(expr::reduce_max_abs(expr::array(input))),
                                       expr::Extent2D{static_cast<int>(rows), slices},
                                       reduce.data(), stream);
    max_d = reduce.data();
  }
  compute_scales_kernel<<<1, kThreads, 0, stream>>>(max_abs, max_d, slices, per_slice_columns,
                                                    columns, lo, m->bsr.value_scale,
                                                    operand_scale.data(), column_scale.data());
  SLICESTREAM_CUDA_CHECK_LAUNCH("compute_scales_kernel");
}

TensorCoreProjector::TensorCoreProjector(std::shared_ptr<const TensorCoreMatrix> matrix,
                                         const TensorCoreProjectorOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (matrix == nullptr) throw std::invalid_argument("TensorCoreProjector: no matrix");
  if (options.gathered_ctas < 0) {
    throw std::invalid_argument("TensorCoreProjector: negative gathered CTA count");
  }
  impl_->m = std::move(matrix);
  impl_->options = options;
  impl_->gathered_forward_args.ctas = options.gathered_ctas;
  impl_->gathered_backward_args.ctas = options.gathered_ctas;
  impl_->symmetric = impl_->m->symmetry != nullptr;
  impl_->per_slice = impl_->symmetric ? 8 : 1;
  impl_->upload_matrix();
  impl_->upload_gathered();
}

TensorCoreProjector::~TensorCoreProjector() = default;

long long TensorCoreProjector::rays() const {
  return impl_->m->geometry.rays();
}
long long TensorCoreProjector::pixels() const {
  return impl_->m->grid.pixels();
}
const TensorCoreMatrix& TensorCoreProjector::matrix() const {
  return *impl_->m;
}

std::size_t TensorCoreProjector::matrix_device_bytes() const {
  const Impl& d = *impl_;
  return d.blocks.bytes() + d.row_ptr.bytes() + d.col_index.bytes() + d.col_ptr.bytes() +
         d.col_blocks.bytes() + d.col_block_rows.bytes() + d.gathered_fwd.bytes() +
         d.gathered_bwd.bytes() + d.ray_of_row.bytes() + d.pixel_of_col.bytes();
}

bool TensorCoreProjector::uses_gathered_products(int slices, bool backward) const {
  return impl_->gathered(slices, backward);
}

std::size_t TensorCoreProjector::device_bytes() const {
  const Impl& d = *impl_;
  const std::size_t maps = d.col_source.bytes() + d.row_source.bytes() + d.ray_slot.bytes() +
                           d.pixel_slots.bytes() + d.octant_image.bytes() + d.ray_image.bytes() +
                           d.transform_mask.bytes();
  const std::size_t work = d.x_half.bytes() + d.y_half.bytes() + d.y_out.bytes() + d.x_out.bytes() +
                           d.operand_scale.bytes() + d.column_scale.bytes() + d.reduce.bytes();
  return matrix_device_bytes() + maps + work;
}

void TensorCoreProjector::reserve_operands(int slices) {
  Impl& d = *impl_;
  // As forward(), backward() and their gathered forms size them.
  const BsrMatrixHalf& bsr = d.m->bsr;
  const std::size_t cols = static_cast<std::size_t>(bsr.cols);
  const std::size_t rows = static_cast<std::size_t>(bsr.rows);
  std::size_t scales = 0;
  if (d.gathered(slices, false)) {
    const std::size_t columns = static_cast<std::size_t>(d.gathered_columns(slices, false));
    Impl::ensure(d.x_half, columns * static_cast<std::size_t>(pixels()));
    scales = columns;
  } else {
    const std::size_t forward = static_cast<std::size_t>(forward_columns(slices));
    Impl::ensure(d.x_half, forward * cols);
    Impl::ensure(d.y_out, forward * rows);
    scales = forward;
  }
  if (d.gathered(slices, true)) {
    const std::size_t columns = static_cast<std::size_t>(d.gathered_columns(slices, true));
    Impl::ensure(d.y_half, columns * static_cast<std::size_t>(rays()));
    scales = std::max(scales, columns);
  } else {
    // The 8-row kernel reads 8 rows past the last block row.
    const std::size_t transposed = static_cast<std::size_t>(transposed_columns(slices));
    Impl::ensure(d.y_half, transposed * (rows + 16));
    Impl::ensure(d.x_out, static_cast<std::size_t>(d.product_values(slices, true)) * cols);
    scales = std::max(scales, transposed);
  }
  Impl::ensure(d.operand_scale, scales);
  Impl::ensure(d.column_scale, scales);
  Impl::ensure(d.reduce, static_cast<std::size_t>(slices));
}

int TensorCoreProjector::forward_columns(int slices) const {
  const int real = impl_->product_values(slices, false);
  const WmmaShape shape = impl_->m->options.shape;
  int columns = round_up(real, dims(shape).n);
  if (columns > 32) columns = round_up(real, 32);
  if (slices <= 0 || forward_warp_columns(shape, columns) == 0) {
    throw std::invalid_argument("Tensor Core forward: " + std::to_string(slices) + " slices need " +
                                std::to_string(real) +
                                " product columns; at most 256 are supported");
  }
  return columns;
}

int TensorCoreProjector::transposed_columns(int slices) const {
  const int real = impl_->product_values(slices, true);
  int columns = round_up(real, 16);
  if (columns > 16) columns = round_up(real, 32);
  if (slices <= 0 || columns > 256) {
    throw std::invalid_argument("Tensor Core backprojection: " + std::to_string(slices) +
                                " slices need " + std::to_string(real) +
                                " product columns; at most 256 are supported");
  }
  return columns;
}

void TensorCoreProjector::forward(const float* image, float* sinogram, int slices,
                                  cudaStream_t stream, const float* max_abs) {
  Impl& d = *impl_;
  d.last_call = Impl::Call::kNone;  // until this call's product is launched
  d.last_forward_gathered = d.gathered(slices, false);
  if (d.last_forward_gathered) {
    d.forward_gathered(image, sinogram, slices, stream, max_abs);
    d.last_call = Impl::Call::kForward;
    return;
  }
  const BsrMatrixHalf& bsr = d.m->bsr;
  const int columns = forward_columns(slices);
  const int nf = dims(d.m->options.shape).n;
  const int lo = d.lo_offset(slices, false);
  d.prepare_scales(image, pixels(), slices, max_abs, columns, d.per_slice, lo, stream);
  const std::size_t x_values =
      static_cast<std::size_t>(columns) * static_cast<std::size_t>(bsr.cols);
  Impl::ensure(d.x_half, x_values);
  Impl::ensure(d.y_out, static_cast<std::size_t>(columns) * static_cast<std::size_t>(bsr.rows));
  forward_operand_kernel<<<blocks_for(x_values), kThreads, 0, stream>>>(
      image, slices, d.symmetric, pixels(), d.col_source.data(), d.octant_image.data(), bsr.cols,
      nf, columns, d.real_columns(slices), lo, d.operand_scale.data(),
      reinterpret_cast<__half*>(d.x_half.data()));
  SLICESTREAM_CUDA_CHECK_LAUNCH("forward_operand_kernel");

  BsrForwardArgs& a = d.forward_args;
  a.blocks = d.blocks.data();
  a.row_ptr = d.row_ptr.data();
  a.col_index = d.col_index.data();
  a.block_row_count = static_cast<int>(bsr.block_row_count());
  a.x = d.x_half.data();
  a.x_rows = bsr.cols;
  a.columns = columns;
  a.column_scale = d.column_scale.data();
  a.y = d.y_out.data();
  a.split_accumulation = d.options.split_accumulation;
  launch_bsr_forward(d.m->options.shape, a, stream);
  d.last_call = Impl::Call::kForward;

  const std::size_t outputs = static_cast<std::size_t>(rays()) * static_cast<std::size_t>(slices);
  forward_output_kernel<<<blocks_for(outputs), kThreads, 0, stream>>>(
      d.y_out.data(), columns, lo, d.symmetric, rays(), slices, d.ray_slot.data(), sinogram);
  SLICESTREAM_CUDA_CHECK_LAUNCH("forward_output_kernel");
}

void TensorCoreProjector::backward(const float* sinogram, float* image, int slices,
                                   cudaStream_t stream, const float* max_abs) {
  Impl& d = *impl_;
  d.last_call = Impl::Call::kNone;  // until this call's product is launched
  d.last_backward_gathered = d.gathered(slices, true);
  if (d.last_backward_gathered) {
    d.backward_gathered(sinogram, image, slices, stream, max_abs);
    d.last_call = Impl::Call::kBackward;
    return;
  }
  const BsrMatrixHalf& bsr = d.m->bsr;
  const int columns16 = transposed_columns(slices);
  const int x_columns = d.product_values(slices, true);
  const long long y_rows = bsr.rows + 16;  // the 8-row kernel reads 8 rows past the last block row
  const int lo = d.lo_offset(slices, true);
  d.prepare_scales(sinogram, rays(), slices, max_abs, columns16, d.per_slice, lo, stream);
  const std::size_t y_values =
      static_cast<std::size_t>(columns16) * static_cast<std::size_t>(y_rows);
  Impl::ensure(d.y_half, y_values);
  Impl::ensure(d.x_out, static_cast<std::size_t>(x_columns) * static_cast<std::size_t>(bsr.cols));
  backward_operand_kernel<<<blocks_for(y_values), kThreads, 0, stream>>>(
      sinogram, slices, d.symmetric, rays(), bsr.rows, d.row_source.data(), d.ray_image.data(),
      y_rows, columns16, d.real_columns(slices), lo, d.operand_scale.data(),
      reinterpret_cast<__half*>(d.y_half.data()));
  SLICESTREAM_CUDA_CHECK_LAUNCH("backward_operand_kernel");

  BsrTransposedArgs& a = d.transposed_args;
  a.blocks = d.blocks.data();
  a.col_ptr = d.col_ptr.data();
  a.col_blocks = d.col_blocks.data();
  a.col_block_rows = d.col_block_rows.data();
  a.block_col_count = static_cast<int>(bsr.block_col_count());
  a.y = d.y_half.data();
  a.y_rows = y_rows;
  a.columns16 = columns16;
  a.x_columns = x_columns;
  a.column_scale = d.column_scale.data();
  a.x = d.x_out.data();
  a.split_accumulation = d.options.split_accumulation;
  launch_bsr_transposed(d.m->options.shape, a, stream);
  d.last_call = Impl::Call::kBackward;

  const std::size_t outputs = static_cast<std::size_t>(pixels()) * static_cast<std::size_t>(slices);
  backward_output_kernel<<<blocks_for(outputs), kThreads, 0, stream>>>(
      d.x_out.data(), x_columns, lo, d.symmetric, pixels(), slices, d.layouts, d.pixel_slots.data(),
      d.transform_mask.data(), image);
  SLICESTREAM_CUDA_CHECK_LAUNCH("backward_output_kernel");
}

void TensorCoreProjector::set_fast_products(bool fast) {
  impl_->fast = fast;
}

void TensorCoreProjector::repeat_last_product(cudaStream_t stream) {
  const Impl& d = *impl_;
  switch (d.last_call) {
    case Impl::Call::kForward:
      if (d.last_forward_gathered) return launch_gathered_spmm(d.gathered_forward_args, stream);
      return launch_bsr_forward(d.m->options.shape, d.forward_args, stream);
    case Impl::Call::kBackward:
      if (d.last_backward_gathered) return launch_gathered_spmm(d.gathered_backward_args, stream);
      return launch_bsr_transposed(d.m->options.shape, d.transposed_args, stream);
    case Impl::Call::kNone:
      break;
  }
  throw std::logic_error("TensorCoreProjector: repeat_last_product before forward or backward");
}

// One gathered product (symmetric_gather.hpp) over the blocks and tables the caller put in `a`:
// `in` (in_rows x slices) becomes fp16 operand rows in `operand`, `out` (out_rows x slices) is
// zeroed and receives the kernel's atomic adds.
void TensorCoreProjector::Impl::run_gathered(const float* in, long long in_rows, float* out,
                                             long long out_rows, int slices, bool backward,
                                             const float* max_abs,
                                             DeviceBuffer<std::uint16_t>& operand,
                                             GatheredSpmmArgs& a, cudaStream_t stream) {
  const int columns = gathered_columns(slices, backward);
  const int lo = gathered_lo(slices, backward);
  prepare_scales(in, in_rows, slices, max_abs, columns, 1, lo, stream);
  const std::size_t values = static_cast<std::size_t>(columns) * static_cast<std::size_t>(in_rows);
  ensure(operand, values);
  const dim3 threads(static_cast<unsigned>(columns), static_cast<unsigned>(kThreads / columns));
  rows_operand_kernel<<<blocks_for(values), threads, 0, stream>>>(
      in, in_rows, slices, columns, lo, operand_scale.data(),
      reinterpret_cast<__half*>(operand.data()));
  SLICESTREAM_CUDA_CHECK_LAUNCH("rows_operand_kernel");
  SLICESTREAM_CUDA_CHECK(
      cudaMemsetAsync(out, 0, static_cast<std::size_t>(out_rows) * slices * sizeof(float), stream));
  a.in = operand.data();
  a.columns = columns;
  a.slices = slices;
  a.lo_offset = lo;
  a.column_scale = column_scale.data();
  a.out = out;
  launch_gathered_spmm(a, stream);
}

// Gathered forward: y[g r] += A_oct[r, :] x[g :] for every g.
void TensorCoreProjector::Impl::forward_gathered(const float* image, float* sinogram, int slices,
                                                 cudaStream_t stream, const float* max_abs) {
  GatheredSpmmArgs& a = gathered_forward_args;
  gathered_fwd.describe(a);
  a.source = pixel_of_col.data();
  a.source_stride = m->bsr.cols;
  a.target = ray_of_row.data();
  a.target_stride = m->bsr.rows;
  run_gathered(image, m->grid.pixels(), sinogram, m->geometry.rays(), slices, false, max_abs,
               x_half, a, stream);
}

// Gathered backward: x[g q] += A_oct^T[q, :] y[g :] for every g, over A_oct^T's own blocks.
void TensorCoreProjector::Impl::backward_gathered(const float* sinogram, float* image, int slices,
                                                  cudaStream_t stream, const float* max_abs) {
  GatheredSpmmArgs& a = gathered_backward_args;
  gathered_bwd.describe(a);
  a.source = ray_of_row.data();
  a.source_stride = m->bsr.rows;
  a.target = pixel_of_col.data();
  a.target_stride = m->bsr.cols;
  run_gathered(sinogram, m->geometry.rays(), image, m->grid.pixels(), slices, true, max_abs, y_half,
               a, stream);
}

}  // namespace slicestream::tensorcore::cuda
