#include "kernels/tensorcore/cuda/cgls_gpu.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/tensorcore/cuda/cuda_check.hpp"
#include "kernels/tensorcore/cuda/device_buffer.hpp"
#include "kernels/tensorcore/cuda/fused_expression_kernel.cuh"

namespace slicestream::tensorcore::cuda {

namespace {

using fused::assign;
using fused::pass_of;
using fused::per_column;
using fused::reduce_only;
using fused::sum_of_squares;
using fused::vec;

// alpha = gamma / delta for active columns with a step to take; counts the steps.
__global__ void alpha_kernel(int columns, const double* gamma, const double* delta,
                             const int* active, float* alpha, int* steps) {
  const int c = static_cast<int>(threadIdx.x);
  if (c >= columns) return;
  const bool step = active[c] != 0 && gamma[c] > 0 && delta[c] > 0;
  alpha[c] = step ? static_cast<float>(gamma[c] / delta[c]) : 0.0f;
  steps[c] += step ? 1 : 0;
}

// beta = gamma' / gamma; gamma <- gamma' where a step was taken.
__global__ void beta_kernel(int columns, double* gamma, const double* gamma_next,
                            const float* alpha, float* beta) {
  const int c = static_cast<int>(threadIdx.x);
  if (c >= columns) return;
  beta[c] = gamma[c] > 0 ? static_cast<float>(gamma_next[c] / gamma[c]) : 0.0f;
  if (alpha[c] != 0.0f) gamma[c] = gamma_next[c];
}

__global__ void to_float_kernel(int columns, const double* in, float* out) {
  const int c = static_cast<int>(threadIdx.x);
  if (c < columns) out[c] = static_cast<float>(in[c]);
}

}  // namespace

CglsReport cgls_gpu(DeviceProjectionOperator& op, const float* b, float* x, int columns,
                    const CglsOptions& options, cudaStream_t stream) {
  if (columns <= 0 || columns > 256) throw std::invalid_argument("cgls_gpu: 1 to 256 columns");
  if (options.max_iterations < 0) throw std::invalid_argument("cgls_gpu: negative iteration count");
  const std::size_t c = static_cast<std::size_t>(columns);
  const std::size_t ray_values = static_cast<std::size_t>(op.rays()) * c;
  const std::size_t pixel_values = static_cast<std::size_t>(op.pixels()) * c;
  DeviceBuffer<float> r(ray_values), q(ray_values), s(pixel_values), p(pixel_values),
      t(pixel_values), alpha(c), beta(c), p_max(c);
  DeviceBuffer<double> b_norm2(c), gamma(c), delta(c), gamma_next(c), p_max_d(c);
  const int max_iterations = options.max_iterations;
  DeviceBuffer<double> history((static_cast<std::size_t>(max_iterations) + 1) * c);  // |r|^2
  DeviceBuffer<int> active(c), steps(c);
  std::vector<int> active_host(c, 1);
  active.upload(active_host);
  steps.zero(stream);

  evaluate_device(reduce_only(sum_of_squares(vec(b))), ray_values, columns, b_norm2.data(), stream);
  // r = b - A x, s = A^T r, p = s, gamma = |s|^2, and max |p| for the next forward's fp16 scale.
  op.forward(x, q.data(), columns, stream);
  evaluate_device(pass_of(assign(r.data(), vec(b) - vec(q.data())), sum_of_squares(vec(r.data()))),
                  ray_values, columns, history.data(), stream);
  op.backward(r.data(), s.data(), columns, stream);
  DeviceBuffer<double> start_results(2 * c);  // |s|^2 then max |s|
  evaluate_device(pass_of(assign(p.data(), vec(s.data())), fused::NoAssign{},
                          sum_of_squares(vec(s.data())), fused::max_abs(vec(s.data()))),
                  pixel_values, columns, start_results.data(), stream);
  check(cudaMemcpyAsync(gamma.data(), start_results.data(), c * sizeof(double),
                        cudaMemcpyDeviceToDevice, stream),
        "gamma");
  to_float_kernel<<<1, 256, 0, stream>>>(columns, start_results.data() + c, p_max.data());
  check_launch("to_float_kernel");

  const std::vector<double> b_host = b_norm2.download();
  std::vector<double> residual_host(c);
  CglsReport report;
  report.column_iterations.assign(c, 0);
  const bool early_stop = options.relative_tolerance > 0;
  auto relative = [&](std::size_t col, double r2) {
    return b_host[col] > 0 ? std::sqrt(r2 / b_host[col]) : std::sqrt(r2);
  };
  // Stops converged columns (alpha 0 from then on); false when none is left.
  auto update_active = [&](const double* device_r2) {
    check(cudaMemcpyAsync(residual_host.data(), device_r2, c * sizeof(double),
                          cudaMemcpyDeviceToHost, stream),
          "residual read-back");
    check(cudaStreamSynchronize(stream), "cgls_gpu");
    bool any = false;
    for (std::size_t col = 0; col < c; ++col) {
      if (active_host[col] != 0 &&
          relative(col, residual_host[col]) <= options.relative_tolerance) {
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
    evaluate_device(reduce_only(sum_of_squares(vec(q.data()))), ray_values, columns, delta.data(),
                    stream);
    alpha_kernel<<<1, 256, 0, stream>>>(columns, gamma.data(), delta.data(), active.data(),
                                        alpha.data(), steps.data());
    check_launch("alpha_kernel");
    evaluate_device(pass_of(assign(x, vec(x) + per_column(alpha.data()) * vec(p.data()))),
                    pixel_values, columns, nullptr, stream);
    double* r2 = history.data() + (static_cast<std::size_t>(it) + 1) * c;
    evaluate_device(
        pass_of(assign(r.data(), vec(r.data()) - per_column(alpha.data()) * vec(q.data())),
                sum_of_squares(vec(r.data()))),
        ray_values, columns, r2, stream);
    ++iterations;
    // s -= alpha A^T q (paper Alg. 1; cgls.cpp says why q and not r is back projected).
    op.backward(q.data(), t.data(), columns, stream);
    evaluate_device(
        pass_of(assign(s.data(), vec(s.data()) - per_column(alpha.data()) * vec(t.data())),
                sum_of_squares(vec(s.data()))),
        pixel_values, columns, gamma_next.data(), stream);
    beta_kernel<<<1, 256, 0, stream>>>(columns, gamma.data(), gamma_next.data(), alpha.data(),
                                       beta.data());
    check_launch("beta_kernel");
    evaluate_device(
        pass_of(assign(p.data(), vec(s.data()) + per_column(beta.data()) * vec(p.data())),
                fused::max_abs(vec(p.data()))),
        pixel_values, columns, p_max_d.data(), stream);
    to_float_kernel<<<1, 256, 0, stream>>>(columns, p_max_d.data(), p_max.data());
    check_launch("to_float_kernel");
    if (early_stop) running = update_active(r2);
  }
  check(cudaStreamSynchronize(stream), "cgls_gpu");
  const std::vector<double> all = history.download();
  for (int k = 0; k <= iterations; ++k) {
    std::vector<double> row(c);
    for (std::size_t col = 0; col < c; ++col)
      row[col] = relative(col, all[static_cast<std::size_t>(k) * c + col]);
    report.relative_residual.push_back(std::move(row));
  }
  const std::vector<int> steps_host = steps.download();
  for (std::size_t col = 0; col < c; ++col)
    report.column_iterations[col] = steps_host[col];
  report.iterations = iterations;
  return report;
}

}  // namespace slicestream::tensorcore::cuda
