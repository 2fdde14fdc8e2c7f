#include "bench/tensorcore/cg_measurements.hpp"

#include <algorithm>

#include "kernels/steady_clock.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/solvers/cuda/cgls_gpu.hpp"
#include "tests/support/ellipse_phantom_2d.hpp"

namespace slicestream::tensorcore::bench {
namespace {

using ::slicestream::cuda::DeviceBuffer;

float slice_scale(int s) {
  return 1.0f + 0.01f * static_cast<float>(s);
}

// `iterations` CGLS steps from x's start value in a workspace of their own.
void solve(solvers::cuda::DeviceProjectionOperator& op, const float* b, float* x, int slices,
           int iterations, cudaStream_t stream) {
  solvers::CglsOptions options;
  options.max_iterations = iterations;
  solvers::cuda::CglsWorkspaceGpu workspace;
  solvers::cuda::cgls_gpu(op, b, x, slices, options, stream, workspace);
}

}  // namespace

std::vector<float> scaled_slices(const std::vector<float>& data, int slices) {
  std::vector<float> b(data.size() * static_cast<std::size_t>(slices));
  for (std::size_t r = 0; r < data.size(); ++r) {
    for (int s = 0; s < slices; ++s)
      b[r * static_cast<std::size_t>(slices) + static_cast<std::size_t>(s)] =
          data[r] * slice_scale(s);
  }
  return b;
}

double cg_error_slices(solvers::cuda::DeviceProjectionOperator& op, const std::vector<float>& data,
                       int slices, const std::vector<float>& truth, int iterations,
                       cudaStream_t stream) {
  DeviceBuffer<float> d_b(scaled_slices(data, slices));
  DeviceBuffer<float> d_x(truth.size() * static_cast<std::size_t>(slices));
  d_x.zero(stream);
  solve(op, d_b.data(), d_x.data(), slices, iterations, stream);
  const std::vector<float> x = d_x.download();
  double worst = 0;
  std::vector<float> slice_x(truth.size()), slice_truth(truth.size());
  for (int s = 0; s < slices; ++s) {
    for (std::size_t p = 0; p < truth.size(); ++p) {
      slice_x[p] = x[p * static_cast<std::size_t>(slices) + static_cast<std::size_t>(s)];
      slice_truth[p] = truth[p] * slice_scale(s);
    }
    worst = std::max(worst, relative_error(slice_x, slice_truth));
  }
  return worst;
}

std::array<double, 3> cg_errors_by_operands(const std::shared_ptr<const TensorCoreMatrix>& matrix,
                                            cuda::TensorCoreProjectorOptions options,
                                            const std::vector<float>& data, int slices,
                                            const std::vector<float>& truth, int iterations,
                                            cudaStream_t stream) {
  std::array<double, 3> errors{};
  for (int variant = 0; variant < 3; ++variant) {
    options.compensated_operands = variant > 0;
    options.compensate_backward = variant == 1;
    cuda::TensorCoreProjector tc(matrix, options);
    errors[static_cast<std::size_t>(variant)] =
        cg_error_slices(tc, data, slices, truth, iterations, stream);
  }
  return errors;
}

double cg_iteration_ms(solvers::cuda::DeviceProjectionOperator& op, const float* b, int slices,
                       int iterations, cudaStream_t stream) {
  DeviceBuffer<float> x(static_cast<std::size_t>(op.pixels()) * slices);
  auto run = [&](int k) {
    x.zero(stream);
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto t0 = ::slicestream::SteadyClock::now();
    solve(op, b, x.data(), slices, k, stream);
    return ::slicestream::seconds_since(t0) * 1e3;
  };
  run(2);  // warm-up (allocations, cuSPARSE plans)
  const double t_short = run(2);
  const double t_long = run(2 + iterations);
  return (t_long - t_short) / iterations / slices;
}

}  // namespace slicestream::tensorcore::bench
