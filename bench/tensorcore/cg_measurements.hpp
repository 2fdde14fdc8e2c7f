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

// Each slice's error of one `iterations`-step CGLS solve from zero of `slices` slices at once
// (scaled_slices of the phantom data; one slice: the problem itself), with the operator's accurate
// products for the first `accurate_iterations` iterations (CglsOptions::accurate_iterations).
// The gathered symmetric products only run from 16 slices on.
std::vector<double> cg_slice_errors(solvers::cuda::DeviceProjectionOperator& op,
                                    const std::vector<float>& data, int slices,
                                    const std::vector<float>& truth, int iterations,
                                    cudaStream_t stream, int accurate_iterations = kAllAccurate);
// The slice error furthest from `reference` (the fp32 solver's) of such a solve.
double cg_error_slices(solvers::cuda::DeviceProjectionOperator& op, const std::vector<float>& data,
                       int slices, const std::vector<float>& truth, int iterations,
                       double reference, cudaStream_t stream,
                       int accurate_iterations = kAllAccurate);

// How far a multi-slice solve's slices are from fp32 CG: relative differences of the slice
// furthest from the fp32 error of the problem solved alone (`error32`, slice 0), and of the slice
// furthest from the fp32 error of the same slice in an fp32 solve of all slices at once
// (`errors32`: the scaled slices round differently, and CG's 20th iterate is sensitive to that).
struct SliceAccuracy {
  double furthest_error = 0;  // the error of the slice furthest from error32
  double vs_fp32 = 0;
  double vs_same_slice = 0;
};
SliceAccuracy compare_slices(const std::vector<double>& errors, double error32,
                             const std::vector<double>& errors32);

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

// cg_slice_errors through a Tensor Core projector of `matrix` (default options otherwise).
std::vector<double> cg_errors_of(const OperandVariant& variant,
                                 const std::shared_ptr<const TensorCoreMatrix>& matrix,
                                 const std::vector<float>& data, int slices,
                                 const std::vector<float>& truth, int iterations,
                                 cudaStream_t stream);

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
