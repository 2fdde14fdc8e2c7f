// CG measurements of the Tensor Core benchmark: the error of a solve of scaled phantom slices
// against the truth, and the time of one CG iteration per image.
#pragma once

#include <cuda_runtime.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/solvers/cuda/device_projection_operator.hpp"
#include "kernels/tensorcore/cuda/tensorcore_projector.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"

namespace slicestream::tensorcore::bench {

// Every product accurate (CglsOptions' default).
inline constexpr int kAllAccurate = std::numeric_limits<int>::max();

// The slice error furthest from `reference` (the fp32 solver's) of one `iterations`-step CGLS
// solve from zero of `slices` slices at once (scaled_slices of the phantom data; one slice: the
// problem itself), with the operator's accurate products for the first `accurate_iterations`
// iterations (CglsOptions::accurate_iterations). The gathered symmetric products only run from 16
// slices on.
double cg_error_slices(solvers::cuda::DeviceProjectionOperator& op, const std::vector<float>& data,
                       int slices, const std::vector<float>& truth, int iterations,
                       double reference, cudaStream_t stream,
                       int accurate_iterations = kAllAccurate);

// The operand variants of the accuracy tables: fp16 operands, compensated (hi + lo fp16) both
// ways or forward only, and compensated for an accurate start of `accurate_iterations`
// iterations with fp16 operands after (CglsOptions::accurate_iterations).
struct OperandVariant {
  bool compensated = false;
  bool compensate_backward = true;
  int accurate_iterations = kAllAccurate;
  std::string name() const;  // for the tables
  std::string key() const;   // for JSON keys
  cuda::TensorCoreProjectorOptions projector() const;
};
// fp16, compensated, forward compensated, then one accurate start per `accurate_iterations`.
std::vector<OperandVariant> operand_variants(const std::vector<int>& accurate_iterations);

// cg_error_slices through a Tensor Core projector of `matrix` (default options otherwise).
double cg_error_of(const OperandVariant& variant,
                   const std::shared_ptr<const TensorCoreMatrix>& matrix,
                   const std::vector<float>& data, int slices, const std::vector<float>& truth,
                   int iterations, double reference, cudaStream_t stream);

// CG times per image (ms), solves in one warm workspace.
struct CgTimes {
  double iteration_ms = 0;  // one iteration once the accurate start is over: the difference of two
                            // solves longer than it by `iterations`
  double solve_ms = 0;      // a whole solve of `solve_iterations` (start included) per iteration
};
CgTimes cg_times(solvers::cuda::DeviceProjectionOperator& op, const float* b, int slices,
                 int iterations, int solve_iterations, cudaStream_t stream,
                 int accurate_iterations = kAllAccurate);

// cg_times(...).iteration_ms of every product accurate.
double cg_iteration_ms(solvers::cuda::DeviceProjectionOperator& op, const float* b, int slices,
                       int iterations, cudaStream_t stream);

}  // namespace slicestream::tensorcore::bench
