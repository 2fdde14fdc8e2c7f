#include "kernels/tensorcore/cuda/cgls_gpu.hpp"

#include <stdexcept>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/expr_device_evaluate.cuh"
#include "kernels/tensorcore/cgls_steps.hpp"

namespace slicestream::tensorcore::cuda {

namespace {

using ::slicestream::cuda::DeviceBuffer;
using ::slicestream::cuda::evaluate_pass;
namespace cg = cgls_steps;

constexpr int kMaxColumns = 256;

// alpha per active column with a step to take; counts the steps.
__global__ void step_size_kernel(int columns, const double* gamma, const double* delta,
                                 const int* active, float* alpha, int* step_counts) {
  const int c = static_cast<int>(threadIdx.x);
  if (c >= columns) return;
  step_counts[c] += cg::step_size(active[c] != 0, gamma[c], delta[c], &alpha[c]) ? 1 : 0;
}

__global__ void direction_weight_kernel(int columns, double* gamma, const double* gamma_next,
                                        const float* alpha, float* beta) {
  const int c = static_cast<int>(threadIdx.x);
  if (c < columns) cg::direction_weight(&gamma[c], gamma_next[c], alpha[c], &beta[c]);
}

__global__ void to_float_kernel(int columns, const double* in, float* out) {
  const int c = static_cast<int>(threadIdx.x);
  if (c < columns) out[c] = static_cast<float>(in[c]);
}

}  // namespace

CglsReport cgls_gpu(DeviceProjectionOperator& op, const float* b, float* x, int columns,
                    const CglsOptions& options, cudaStream_t stream) {
  if (columns <= 0 || columns > kMaxColumns) {
    throw std::invalid_argument("cgls_gpu: 1 to 256 columns");
  }
  if (options.max_iterations < 0) throw std::invalid_argument("cgls_gpu: negative iteration count");
  const std::size_t c = static_cast<std::size_t>(columns);
  const expr::Extent2D rays{static_cast<int>(op.rays()), columns};
  const expr::Extent2D pixels{static_cast<int>(op.pixels()), columns};
  DeviceBuffer<float> r(rays.size()), q(rays.size()), s(pixels.size()), p(pixels.size()),
      t(pixels.size()), alpha(c), beta(c), p_max(c);
  // start: |s|^2 then max |s| (gamma is its first half).
  DeviceBuffer<double> b_norm2(c), start(2 * c), delta(c), gamma_next(c), p_max_d(c);
  const int max_iterations = options.max_iterations;
  DeviceBuffer<double> history((static_cast<std::size_t>(max_iterations) + 1) * c);  // |r|^2
  DeviceBuffer<int> active(c), step_counts(c);
  std::vector<int> active_host(c, 1);
  active.upload(active_host);
  step_counts.zero(stream);
  double* gamma = start.data();

  evaluate_pass(cg::data_norm(b), rays, b_norm2.data(), stream);
  // r = b - A x, s = A^T r, p = s, gamma = |s|^2, and max |p| for the next forward's fp16 scale.
  op.forward(x, q.data(), columns, stream);
  evaluate_pass(cg::initial_residual(r.data(), b, q.data()), rays, history.data(), stream);
  op.backward(r.data(), s.data(), columns, stream);
  evaluate_pass(cg::initial_direction(p.data(), s.data()), pixels, start.data(), stream);
  to_float_kernel<<<1, kMaxColumns, 0, stream>>>(columns, start.data() + c, p_max.data());
  SLICESTREAM_CUDA_CHECK_LAUNCH("to_float_kernel");

  const std::vector<double> b_host = b_norm2.download();
  std::vector<double> residual_host(c);
  CglsReport report;
  report.column_iterations.assign(c, 0);
  const bool early_stop = options.relative_tolerance > 0;
  // Stops converged columns (alpha 0 from then on); false when none is left.
  auto update_active = [&](const double* device_r2) {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(residual_host.data(), device_r2, c * sizeof(double),
                                           cudaMemcpyDeviceToHost, stream));
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
    bool any = false;
    for (std::size_t col = 0; col < c; ++col) {
      if (active_host[col] != 0 &&
          cg::relative_residual(residual_host[col], b_host[col]) <= options.relative_tolerance) {
        active_host[col] = 0;
      }
      any = any || active_host[col] != 0;
    }
    active.upload(active_host);
    return any;
  };
  bool running = !early_stop || update_active(history.data());

  int iterations = 0;
  for (int it = 0; running && it < max_iterations; ++it) {
    op.forward(p.data(), q.data(), columns, stream, p_max.data());
    evaluate_pass(cg::direction_norm(q.data()), rays, delta.data(), stream);
    step_size_kernel<<<1, kMaxColumns, 0, stream>>>(columns, gamma, delta.data(), active.data(),
                                                    alpha.data(), step_counts.data());
    SLICESTREAM_CUDA_CHECK_LAUNCH("step_size_kernel");
    evaluate_pass(cg::update_solution(x, alpha.data(), p.data()), pixels, nullptr, stream);
    double* r2 = history.data() + (static_cast<std::size_t>(it) + 1) * c;
    evaluate_pass(cg::update_residual(r.data(), alpha.data(), q.data()), rays, r2, stream);
    ++iterations;
    op.backward(q.data(), t.data(), columns, stream);
    evaluate_pass(cg::update_gradient(s.data(), alpha.data(), t.data()), pixels, gamma_next.data(),
                  stream);
    direction_weight_kernel<<<1, kMaxColumns, 0, stream>>>(columns, gamma, gamma_next.data(),
                                                           alpha.data(), beta.data());
    SLICESTREAM_CUDA_CHECK_LAUNCH("direction_weight_kernel");
    evaluate_pass(cg::update_direction(p.data(), s.data(), beta.data()), pixels, p_max_d.data(),
                  stream);
    to_float_kernel<<<1, kMaxColumns, 0, stream>>>(columns, p_max_d.data(), p_max.data());
    SLICESTREAM_CUDA_CHECK_LAUNCH("to_float_kernel");
    if (early_stop) running = update_active(r2);
  }
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<double> all = history.download();
  for (int k = 0; k <= iterations; ++k) {
    std::vector<double> row(c);
    for (std::size_t col = 0; col < c; ++col) {
      row[col] = cg::relative_residual(all[static_cast<std::size_t>(k) * c + col], b_host[col]);
    }
    report.relative_residual.push_back(std::move(row));
  }
  const std::vector<int> steps_host = step_counts.download();
  for (std::size_t col = 0; col < c; ++col)
    report.column_iterations[col] = steps_host[col];
  report.iterations = iterations;
  return report;
}

}  // namespace slicestream::tensorcore::cuda
