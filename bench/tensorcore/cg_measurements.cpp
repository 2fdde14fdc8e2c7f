#include "bench/tensorcore/cg_measurements.hpp"

#include <cmath>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/solvers/cuda/cgls_gpu.hpp"
#include "kernels/steady_clock.hpp"
#include "tests/support/ellipse_phantom_2d.hpp"

namespace slicestream::tensorcore::bench {
namespace {

using ::slicestream::cuda::DeviceBuffer;

// `iterations` CGLS steps from x's start value in `workspace`.
void solve(solvers::cuda::DeviceProjectionOperator& op, const float* b, float* x, int slices,
           int iterations, cudaStream_t stream, int accurate_iterations,
           solvers::cuda::CglsWorkspaceGpu& workspace) {
  solvers::CglsOptions options;
  options.max_iterations = iterations;
  options.accurate_iterations = accurate_iterations;
  solvers::cuda::cgls_gpu(op, b, x, slices, options, stream, workspace);
}

}  // namespace

std::string OperandVariant::name() const {
  if (!compensated) return "fp16 operands";
  if (!compensate_backward) return "forward compensated";
  if (accurate_iterations == kAllAccurate) return "compensated";
  return "accurate start " + std::to_string(accurate_iterations);
}

std::string OperandVariant::key() const {
  if (!compensated) return "fp16";
  if (!compensate_backward) return "forward_compensated";
  if (accurate_iterations == kAllAccurate) return "compensated";
  return "accurate_start_" + std::to_string(accurate_iterations);
}

cuda::TensorCoreProjectorOptions OperandVariant::projector() const {
  cuda::TensorCoreProjectorOptions options;
  options.compensated_operands = compensated;
  options.compensate_backward = compensate_backward;
  return options;
}

std::vector<OperandVariant> operand_variants(const std::vector<int>& accurate_iterations) {
  std::vector<OperandVariant> variants{
      {false, true, kAllAccurate}, {true, true, kAllAccurate}, {true, false, kAllAccurate}};
  for (int k : accurate_iterations)
    variants.push_back({true, true, k});
  return variants;
}

std::vector<double> cg_slice_errors(solvers::cuda::DeviceProjectionOperator& op,
                                    const std::vector<float>& data, int slices,
                                    const std::vector<float>& truth, int iterations,
                                    cudaStream_t stream, int accurate_iterations) {
  DeviceBuffer<float> d_b(scaled_slices(data, slices));
  DeviceBuffer<float> d_x(truth.size() * static_cast<std::size_t>(slices));
  d_x.zero(stream);
  solvers::cuda::CglsWorkspaceGpu workspace;
  solve(op, d_b.data(), d_x.data(), slices, iterations, stream, accurate_iterations, workspace);
  return slice_errors(d_x.download(), truth, slices);
}

double cg_error_slices(solvers::cuda::DeviceProjectionOperator& op, const std::vector<float>& data,
                       int slices, const std::vector<float>& truth, int iterations,
                       double reference, cudaStream_t stream, int accurate_iterations) {
  return furthest_slice_error(
      cg_slice_errors(op, data, slices, truth, iterations, stream, accurate_iterations), reference);
}

SliceAccuracy compare_slices(const std::vector<double>& errors, double error32,
                             const std::vector<double>& errors32) {
  SliceAccuracy a;
  a.furthest_error = furthest_slice_error(errors, error32);
  a.vs_fp32 = (a.furthest_error - error32) / error32;
  for (std::size_t s = 0; s < errors.size() && s < errors32.size(); ++s) {
    const double d = (errors[s] - errors32[s]) / errors32[s];
    if (std::fabs(d) > std::fabs(a.vs_same_slice)) a.vs_same_slice = d;
  }
  return a;
}

std::vector<double> cg_errors_of(const OperandVariant& variant,
                                 const std::shared_ptr<const TensorCoreMatrix>& matrix,
                                 const std::vector<float>& data, int slices,
                                 const std::vector<float>& truth, int iterations,
                                 cudaStream_t stream) {
  cuda::TensorCoreProjector tc(matrix, variant.projector());
  return cg_slice_errors(tc, data, slices, truth, iterations, stream, variant.accurate_iterations);
}

CgTimes cg_times(solvers::cuda::DeviceProjectionOperator& op, const float* b, int slices,
                 int iterations, int solve_iterations, cudaStream_t stream,
                 int accurate_iterations) {
  DeviceBuffer<float> x(static_cast<std::size_t>(op.pixels()) * slices);
  solvers::cuda::CglsWorkspaceGpu workspace;
  auto run = [&](int k) {
    x.zero(stream);
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto t0 = ::slicestream::SteadyClock::now();
    solve(op, b, x.data(), slices, k, stream, accurate_iterations, workspace);
    return ::slicestream::seconds_since(t0) * 1e3;
  };
  // Past the accurate start (if it ends within the solve), two iterations for the set-up.
  const int start = 2 + (accurate_iterations < solve_iterations ? accurate_iterations : 0);
  run(start + iterations);  // warm-up (allocations, cuSPARSE plans, the work spaces' growth)
  CgTimes t;
  const double t_short = run(start);
  const double t_long = run(start + iterations);
  t.iteration_ms = (t_long - t_short) / iterations / slices;
  t.solve_ms = run(solve_iterations) / solve_iterations / slices;
  return t;
}

double cg_iteration_ms(solvers::cuda::DeviceProjectionOperator& op, const float* b, int slices,
                       int iterations, cudaStream_t stream) {
  return cg_times(op, b, slices, iterations, iterations, stream).iteration_ms;
}

}  // namespace slicestream::tensorcore::bench
