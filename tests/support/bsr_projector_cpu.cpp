#include "tests/support/bsr_projector_cpu.hpp"

#include <cmath>
#include <stdexcept>

#include "kernels/expr/host_evaluate.hpp"
#include "kernels/half_float.hpp"
#include "kernels/tensorcore/operand_scaling.hpp"
#include "tests/support/bsr_multiply_cpu.hpp"
#include "tests/support/operand_transforms_cpu.hpp"

namespace slicestream::tensorcore {

void round_columns_to_half(float* data, long long rows, int columns, float* scales) {
  // max |column| as on the GPU (TensorCoreProjector): one fused pass of the expression layer.
  std::vector<double> max_abs(static_cast<std::size_t>(columns));
  const float* values = data;
  expr::evaluate_pass(expr::fused(expr::reduce_max_abs(expr::array(values))),
                      expr::Extent2D{static_cast<int>(rows), columns}, max_abs.data());
  for (int c = 0; c < columns; ++c) {
    scales[c] = half_operand_scale(static_cast<float>(max_abs[static_cast<std::size_t>(c)]));
  }
  for (long long r = 0; r < rows; ++r) {
    for (int c = 0; c < columns; ++c) {
      float& v = data[r * columns + c];
      v = half_to_float(float_to_half(v * scales[c]));
    }
  }
}

BsrProjectorCpu::BsrProjectorCpu(std::shared_ptr<const TensorCoreMatrix> matrix, Executor& executor,
                                 const BsrProjectorCpuOptions& options)
    : matrix_(std::move(matrix)),
      executor_(executor),
      compensate_forward_(options.compensated),
      compensate_backward_(options.compensated && options.compensate_backward),
      accumulation_(options.accumulation) {
  if (matrix_ == nullptr) throw std::invalid_argument("BsrProjectorCpu: no matrix");
}

int BsrProjectorCpu::make_operands(const float* values, long long rows, int columns,
                                   bool compensate, std::vector<float>* undo) {
  const int wide = compensate ? 2 * columns : columns;
  const std::size_t c = static_cast<std::size_t>(columns);
  operands_.assign(static_cast<std::size_t>(rows) * static_cast<std::size_t>(wide), 0.0f);
  std::vector<float> hi(values, values + static_cast<std::size_t>(rows) * c);
  std::vector<float> scales(c);
  round_columns_to_half(hi.data(), rows, columns, scales.data());
  undo->assign(static_cast<std::size_t>(wide), 0.0f);
  for (std::size_t k = 0; k < c; ++k) {
    (*undo)[k] = 1.0f / scales[k];
    if (compensate) (*undo)[c + k] = 1.0f / (scales[k] * kLowOperandFactor);
  }
  for (long long r = 0; r < rows; ++r) {
    for (std::size_t k = 0; k < c; ++k) {
      const std::size_t in = static_cast<std::size_t>(r) * c + k;
      float* row = operands_.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(wide);
      row[k] = hi[in];
      if (compensate) {
        const float rest = (values[in] * scales[k] - hi[in]) * kLowOperandFactor;
        row[c + k] = half_to_float(float_to_half(rest));
      }
    }
  }
  return wide;
}

void BsrProjectorCpu::forward_plain(const float* image, float* sinogram, int columns) {
  const TensorCoreMatrix& m = *matrix_;
  const std::size_t c = static_cast<std::size_t>(columns);
  const bool compensate_forward = compensate_forward_ && !fast_;
  std::vector<float> replicated(static_cast<std::size_t>(m.bsr.cols) * c, 0.0f);
  replicate_columns(m.col_layouts, image, replicated.data(), columns);
  std::vector<float> undo;
  const int wide = make_operands(replicated.data(), m.bsr.cols, columns, compensate_forward, &undo);
  const std::size_t w = static_cast<std::size_t>(wide);
  mapped_out_.resize(static_cast<std::size_t>(m.bsr.rows) * w);
  bsr_multiply_cpu(executor_, m.bsr, operands_.data(), mapped_out_.data(), wide, accumulation_);
  for (long long r = 0; r < m.row_mapping.size(); ++r) {
    const std::size_t slot =
        static_cast<std::size_t>(m.row_mapping.to_mapped[static_cast<std::size_t>(r)]);
    for (std::size_t k = 0; k < c; ++k) {
      float v = mapped_out_[slot * w + k] * undo[k];
      if (compensate_forward) v += mapped_out_[slot * w + c + k] * undo[c + k];
      sinogram[static_cast<std::size_t>(r) * c + k] = v;
    }
  }
}

void BsrProjectorCpu::backward_plain(const float* sinogram, float* image, int columns) {
  const TensorCoreMatrix& m = *matrix_;
  const std::size_t c = static_cast<std::size_t>(columns);
  const bool compensate_backward = compensate_backward_ && !fast_;
  mapped_in_.assign(static_cast<std::size_t>(m.bsr.rows) * c, 0.0f);
  map_rows(m.row_mapping, sinogram, mapped_in_.data(), columns);
  std::vector<float> undo;
  const int wide =
      make_operands(mapped_in_.data(), m.bsr.rows, columns, compensate_backward, &undo);
  const std::size_t w = static_cast<std::size_t>(wide);
  mapped_out_.resize(static_cast<std::size_t>(m.bsr.cols) * w);
  bsr_multiply_transposed_cpu(executor_, m.bsr, operands_.data(), mapped_out_.data(), wide,
                              accumulation_);
  std::vector<float> combined(static_cast<std::size_t>(m.bsr.cols) * c);
  for (long long q = 0; q < m.bsr.cols; ++q) {
    for (std::size_t k = 0; k < c; ++k) {
      float v = mapped_out_[static_cast<std::size_t>(q) * w + k] * undo[k];
      if (compensate_backward) {
        v += mapped_out_[static_cast<std::size_t>(q) * w + c + k] * undo[c + k];
      }
      combined[static_cast<std::size_t>(q) * c + k] = v;
    }
  }
  sum_columns(m.col_layouts, combined.data(), image, columns);
}

void BsrProjectorCpu::forward(const float* image, float* sinogram, int columns) {
  const TensorCoreMatrix& m = *matrix_;
  if (!m.symmetry) {
    forward_plain(image, sinogram, columns);
    return;
  }
  const int wide = kSymmetryCount * columns;
  octant_.resize(static_cast<std::size_t>(m.grid.pixels()) * static_cast<std::size_t>(wide));
  octant_rays_.resize(static_cast<std::size_t>(rays()) * static_cast<std::size_t>(wide));
  symmetric_gather(*m.symmetry, image, octant_.data(), columns);
  forward_plain(octant_.data(), octant_rays_.data(), wide);
  symmetric_combine(*m.symmetry, octant_rays_.data(), sinogram, columns);
}

void BsrProjectorCpu::backward(const float* sinogram, float* image, int columns) {
  const TensorCoreMatrix& m = *matrix_;
  if (!m.symmetry) {
    backward_plain(sinogram, image, columns);
    return;
  }
  const int wide = kSymmetryCount * columns;
  octant_.resize(static_cast<std::size_t>(m.grid.pixels()) * static_cast<std::size_t>(wide));
  octant_rays_.resize(static_cast<std::size_t>(rays()) * static_cast<std::size_t>(wide));
  symmetric_spread(*m.symmetry, sinogram, octant_rays_.data(), columns);
  backward_plain(octant_rays_.data(), octant_.data(), wide);
  symmetric_scatter(*m.symmetry, octant_.data(), image, columns);
}

}  // namespace slicestream::tensorcore
