#include "kernels/tensorcore/bsr_projector_cpu.hpp"

#include <cmath>
#include <stdexcept>

#include "kernels/tensorcore/half_float.hpp"
#include "kernels/tensorcore/operand_scaling.hpp"

namespace slicestream::tensorcore {

void round_columns_to_half(float* data, long long rows, int columns, float* scales) {
  std::vector<float> max_abs(static_cast<std::size_t>(columns), 0.0f);
  for (long long r = 0; r < rows; ++r) {
    for (int c = 0; c < columns; ++c) {
      max_abs[static_cast<std::size_t>(c)] =
          std::fmax(max_abs[static_cast<std::size_t>(c)], std::fabs(data[r * columns + c]));
    }
  }
  for (int c = 0; c < columns; ++c) {
    scales[c] = half_operand_scale(max_abs[static_cast<std::size_t>(c)]);
  }
  for (long long r = 0; r < rows; ++r) {
    for (int c = 0; c < columns; ++c) {
      float& v = data[r * columns + c];
      v = half_bits_to_float(float_to_half_bits(v * scales[c]));
    }
  }
}

BsrProjectorCpu::BsrProjectorCpu(std::shared_ptr<const TensorCoreMatrix> matrix)
    : matrix_(std::move(matrix)) {
  if (matrix_ == nullptr) throw std::invalid_argument("BsrProjectorCpu: no matrix");
}

void BsrProjectorCpu::forward_plain(const float* image, float* sinogram, int columns) {
  const TensorCoreMatrix& m = *matrix_;
  const std::size_t c = static_cast<std::size_t>(columns);
  mapped_in_.resize(static_cast<std::size_t>(m.bsr.cols) * c);
  mapped_out_.resize(static_cast<std::size_t>(m.bsr.rows) * c);
  std::fill(mapped_in_.begin(), mapped_in_.end(), 0.0f);
  replicate_columns(m.col_layouts, image, mapped_in_.data(), columns);
  std::vector<float> scales(c);
  round_columns_to_half(mapped_in_.data(), m.bsr.cols, columns, scales.data());
  bsr_multiply_cpu(m.bsr, mapped_in_.data(), mapped_out_.data(), columns);
  for (long long r = 0; r < m.row_mapping.size(); ++r) {
    const long long slot = m.row_mapping.to_mapped[static_cast<std::size_t>(r)];
    for (std::size_t k = 0; k < c; ++k) {
      sinogram[static_cast<std::size_t>(r) * c + k] =
          mapped_out_[static_cast<std::size_t>(slot) * c + k] / scales[k];
    }
  }
}

void BsrProjectorCpu::backward_plain(const float* sinogram, float* image, int columns) {
  const TensorCoreMatrix& m = *matrix_;
  const std::size_t c = static_cast<std::size_t>(columns);
  mapped_in_.resize(static_cast<std::size_t>(m.bsr.rows) * c);
  mapped_out_.resize(static_cast<std::size_t>(m.bsr.cols) * c);
  std::fill(mapped_in_.begin(), mapped_in_.end(), 0.0f);
  map_rows(m.row_mapping, sinogram, mapped_in_.data(), columns);
  std::vector<float> scales(c);
  round_columns_to_half(mapped_in_.data(), m.bsr.rows, columns, scales.data());
  bsr_multiply_transposed_cpu(m.bsr, mapped_in_.data(), mapped_out_.data(), columns);
  sum_columns(m.col_layouts, mapped_out_.data(), image, columns);
  for (long long p = 0; p < m.grid.pixels(); ++p) {
    for (std::size_t k = 0; k < c; ++k)
      image[static_cast<std::size_t>(p) * c + k] /= scales[k];
  }
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
