#include "bench/tensorcore/projector_timing.hpp"

#include "bench/common/gpu_timer.hpp"
#include "bench/tensorcore/cg_measurements.hpp"

namespace slicestream::tensorcore::bench {

double median_ms(const SizeRun& run, const std::function<void()>& work) {
  return ::slicestream::bench::median_ms([&](cudaStream_t) { work(); }, run.o.repetitions,
                                         run.stream, 2);
}

ProjectorTimes measure_projector(cuda::TensorCoreProjector& tc, SizeRun& run, bool with_cg) {
  const Options& o = run.o;
  const cudaStream_t stream = run.stream;
  ProjectorTimes t;
  const BsrMatrixHalf& bsr = tc.matrix().bsr;
  t.bytes = static_cast<double>(tc.matrix_device_bytes());
  t.fwd_ms =
      median_ms(run, [&] { tc.forward(run.image.data(), run.sino.data(), o.slices, stream); });
  t.spmm_fwd_ms = median_ms(run, [&] { tc.repeat_last_product(stream); });
  t.bwd_ms = median_ms(
      run, [&] { tc.backward(run.sino_in.data(), run.image_out.data(), o.slices, stream); });
  t.spmm_bwd_ms = median_ms(run, [&] { tc.repeat_last_product(stream); });
  // Bytes the kernels must read: the blocks plus their index (row or column order).
  const double fwd_bytes =
      static_cast<double>(bsr.block_bytes()) + 4.0 * (bsr.row_ptr.size() + bsr.col_index.size());
  const double bwd_bytes = static_cast<double>(bsr.block_bytes()) +
                           4.0 * (bsr.col_ptr.size() + 2.0 * bsr.col_blocks.size());
  t.fwd_gbs = fwd_bytes / (t.spmm_fwd_ms * 1e-3) / 1e9;
  t.bwd_gbs = bwd_bytes / (t.spmm_bwd_ms * 1e-3) / 1e9;
  if (with_cg) t.cg_ms = cg_iteration_ms(tc, run.cg_b.data(), o.slices, o.cg_iterations, stream);
  return t;
}

Json to_json(const ProjectorTimes& t) {
  Json j;
  j.num("matrix_bytes", t.bytes).num("forward_ms", t.fwd_ms).num("backward_ms", t.bwd_ms);
  j.num("spmm_forward_ms", t.spmm_fwd_ms).num("spmm_backward_ms", t.spmm_bwd_ms);
  j.num("effective_forward_gbs", t.fwd_gbs).num("effective_backward_gbs", t.bwd_gbs);
  j.num("cg_iteration_ms_per_image", t.cg_ms);
  return j;
}

}  // namespace slicestream::tensorcore::bench
