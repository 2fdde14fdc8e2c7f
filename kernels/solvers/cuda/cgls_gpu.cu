#include "kernels/solvers/cuda/cgls_gpu.hpp"

#include <stdexcept>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/expr_device_evaluate.cuh"
#include "kernels/solvers/accurate_products_scope.hpp"
#include "kernels/solvers/cgls_steps.hpp"

namespace slicestream::solvers::cuda {

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

// The first `count` values of a device vector (the workspace may hold more), after the stream's
// work so far.
template <typename T>
std::vector<T> copy_to_host(const T* device, std::size_t count, cudaStream_t stream) {
  std::vector<T> host(count);
  SLICESTREAM_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// Host values into the first host.size() of a device vector, in stream order (the host vector
// must live until the stream has read it: the solve synchronises before it returns).
void copy_to_device(int* device, const std::vector<int>& host, cudaStream_t stream) {
  SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(int),
                                         cudaMemcpyHostToDevice, stream));
}

}  // namespace

void CglsWorkspaceGpu::reserve(const CglsSize& size) {
  if (size.fits_in(capacity_)) return;
  const CglsSize grown = capacity_.covering(size);
  const std::size_t columns = static_cast<std::size_t>(grown.columns);
  const std::size_t rays = static_cast<std::size_t>(grown.rays) * columns;
  const std::size_t pixels = static_cast<std::size_t>(grown.pixels) * columns;
  const std::size_t history_values = (static_cast<std::size_t>(grown.max_iterations) + 1) * columns;
  // resize() frees a buffer before it allocates the larger one and keeps one of the right size.
  for (DeviceBuffer<float>* v : {&r, &q})
    v->resize(rays);
  for (DeviceBuffer<float>* v : {&s, &p, &t})
    v->resize(pixels);
  for (DeviceBuffer<float>* v : {&alpha, &beta, &p_max})
    v->resize(columns);
  for (DeviceBuffer<double>* v : {&b_norm2, &delta, &gamma_next, &p_max_d})
    v->resize(columns);
  start.resize(2 * columns);
  history.resize(history_values);
  active.resize(columns);
  step_counts.resize(columns);
  capacity_ = grown;
}

std::size_t CglsWorkspaceGpu::bytes() const {
  return cgls_gpu_workspace_bytes(capacity_);
}

CglsReport cgls_gpu(DeviceProjectionOperator& op, const float* b, float* x, int columns,
                    const CglsOptions& options, cudaStream_t stream, CglsWorkspaceGpu& workspace) {
  if (columns <= 0 || columns > kMaxColumns) {
    throw std::invalid_argument("cgls_gpu: 1 to 256 columns");
  }
  if (options.max_iterations < 0) throw std::invalid_argument("cgls_gpu: negative iteration count");
  if (options.accurate_iterations < 0) {
    throw std::invalid_argument("cgls_gpu: negative accurate iteration count");
  }
  const std::size_t c = static_cast<std::size_t>(columns);
  const expr::Extent2D rays{static_cast<int>(op.rays()), columns};
  const expr::Extent2D pixels{static_cast<int>(op.pixels()), columns};
  const int max_iterations = options.max_iterations;
  workspace.reserve({op.rays(), op.pixels(), columns, max_iterations});
  CglsWorkspaceGpu& w = workspace;
  float* r = w.r.data();
  float* q = w.q.data();
  float* s = w.s.data();
  float* p = w.p.data();
  float* t = w.t.data();
  float* alpha = w.alpha.data();
  float* beta = w.beta.data();
  float* p_max = w.p_max.data();
  double* b_norm2 = w.b_norm2.data();
  double* start = w.start.data();  // |s|^2 (gamma), then max |s|
  double* delta = w.delta.data();
  double* gamma_next = w.gamma_next.data();
  double* p_max_d = w.p_max_d.data();
  double* history = w.history.data();  // |r|^2 after every iteration
  int* active = w.active.data();
  int* step_counts = w.step_counts.data();
  std::vector<int> active_host(c, 1);
  copy_to_device(active, active_host, stream);
  SLICESTREAM_CUDA_CHECK(cudaMemsetAsync(step_counts, 0, c * sizeof(int), stream));
  double* gamma = start;

  AccurateProductsScope<DeviceProjectionOperator> precision(op, options.accurate_iterations);
  evaluate_pass(cg::data_norm(b), rays, b_norm2, stream);
  // r = b - A x, s = A^T r, p = s, gamma = |s|^2, and max |p| for the next forward's fp16 scale.
  op.forward(x, q, columns, stream);
  evaluate_pass(cg::initial_residual(r, b, q), rays, history, stream);
  op.backward(r, s, columns, stream);
  evaluate_pass(cg::initial_direction(p, s), pixels, start, stream);
  to_float_kernel<<<1, kMaxColumns, 0, stream>>>(columns, start + c, p_max);
  SLICESTREAM_CUDA_CHECK_LAUNCH("to_float_kernel");

  const std::vector<double> b_host = copy_to_host(b_norm2, c, stream);
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
    copy_to_device(active, active_host, stream);
    return any;
  };
  bool running = !early_stop || update_active(history);

  int iterations = 0;
  for (int it = 0; running && it < max_iterations; ++it) {
    precision.before_iteration(it);
    op.forward(p, q, columns, stream, p_max);
    evaluate_pass(cg::direction_norm(q), rays, delta, stream);
    step_size_kernel<<<1, kMaxColumns, 0, stream>>>(columns, gamma, delta, active, alpha,
                                                    step_counts);
    SLICESTREAM_CUDA_CHECK_LAUNCH("step_size_kernel");
    evaluate_pass(cg::update_solution(x, alpha, p), pixels, nullptr, stream);
    double* r2 = history + (static_cast<std::size_t>(it) + 1) * c;
    evaluate_pass(cg::update_residual(r, alpha, q), rays, r2, stream);
    ++iterations;
    op.backward(q, t, columns, stream);
    evaluate_pass(cg::update_gradient(s, alpha, t), pixels, gamma_next, stream);
    direction_weight_kernel<<<1, kMaxColumns, 0, stream>>>(columns, gamma, gamma_next, alpha, beta);
    SLICESTREAM_CUDA_CHECK_LAUNCH("direction_weight_kernel");
    evaluate_pass(cg::update_direction(p, s, beta), pixels, p_max_d, stream);
    to_float_kernel<<<1, kMaxColumns, 0, stream>>>(columns, p_max_d, p_max);
    SLICESTREAM_CUDA_CHECK_LAUNCH("to_float_kernel");
    if (early_stop) running = update_active(r2);
  }
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<double> all =
      copy_to_host(history, (static_cast<std::size_t>(iterations) + 1) * c, stream);
  for (int k = 0; k <= iterations; ++k) {
    std::vector<double> row(c);
    for (std::size_t col = 0; col < c; ++col) {
      row[col] = cg::relative_residual(all[static_cast<std::size_t>(k) * c + col], b_host[col]);
    }
    report.relative_residual.push_back(std::move(row));
  }
  const std::vector<int> steps_host = copy_to_host(step_counts, c, stream);
  for (std::size_t col = 0; col < c; ++col)
    report.column_iterations[col] = steps_host[col];
  report.iterations = iterations;
  return report;
}

}  // namespace slicestream::solvers::cuda
