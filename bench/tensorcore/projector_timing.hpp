// Times of one Tensor Core projector on the benchmark's inputs: forward and back projection of
// all slices, the sparse product alone (TensorCoreProjector::repeat_last_product), its effective
// bandwidth, and optionally one CG iteration per image.
#pragma once

#include <functional>

#include "bench/tensorcore/json_writer.hpp"
#include "bench/tensorcore/tensorcore_bench_run.hpp"
#include "kernels/tensorcore/cuda/tensorcore_projector.hpp"

namespace slicestream::tensorcore::bench {

struct ProjectorTimes {
  double bytes = 0, fwd_ms = 0, bwd_ms = 0, spmm_fwd_ms = 0, spmm_bwd_ms = 0, cg_ms = 0;
  double fwd_gbs = 0, bwd_gbs = 0;
  double fp_bp_per_image(int slices) const { return (fwd_ms + bwd_ms) / slices; }
};

ProjectorTimes measure_projector(cuda::TensorCoreProjector& tc, SizeRun& run, bool with_cg);

// Median milliseconds of `work` (enqueued on the run's stream) over the run's repetitions.
double median_ms(const SizeRun& run, const std::function<void()>& work);

Json to_json(const ProjectorTimes& t);

}  // namespace slicestream::tensorcore::bench
