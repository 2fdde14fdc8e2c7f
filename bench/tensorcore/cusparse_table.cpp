// The fp32 cuSPARSE baseline in the same run: SpMM forward and backward over all slices, SpMV,
// one CG iteration per image and (with the accuracy table) the fp32 CG error.
#include <cstdio>

#include "bench/tensorcore/cg_measurements.hpp"
#include "bench/tensorcore/projector_timing.hpp"
#include "bench/tensorcore/tensorcore_bench_run.hpp"
#include "tests/support/cuda/cusparse_projector.hpp"

namespace slicestream::tensorcore::bench {

Json cusparse_table(SizeRun& run, CusparseBaseline* baseline) {
  const Options& o = run.o;
  const cudaStream_t stream = run.stream;
  CusparseBaseline& b = *baseline;
  cuda::CusparseProjector csr(run.a);
  b.forward_ms =
      median_ms(run, [&] { csr.forward(run.image.data(), run.sino.data(), o.slices, stream); });
  b.backward_ms = median_ms(
      run, [&] { csr.backward(run.sino_in.data(), run.image_out.data(), o.slices, stream); });
  b.spmv_ms = median_ms(run, [&] { csr.forward(run.image.data(), run.sino.data(), 1, stream); });
  const double spmv_backward_ms =
      median_ms(run, [&] { csr.backward(run.sino_in.data(), run.image_out.data(), 1, stream); });
  if (o.cg) {
    const CgTimes cg =
        cg_times(csr, run.cg_b.data(), o.slices, o.cg_iterations, o.accuracy_iterations, stream);
    b.cg_ms = cg.iteration_ms;
    b.cg_solve_ms = cg.solve_ms;
  }
  if (o.accuracy) {
    // One slice: its error itself (the reference 0 only picks the slice).
    b.error32 = cg_error_slices(csr, run.problem.data, 1, run.problem.truth, o.accuracy_iterations,
                                0.0, stream);
    b.slice_errors32 = cg_slice_errors(csr, run.problem.data, o.slices, run.problem.truth,
                                       o.accuracy_iterations, stream);
  }
  const double bytes = static_cast<double>(csr.matrix_device_bytes());
  Json cs;
  cs.str("configuration", csr.configuration()).num("matrix_bytes", bytes);
  cs.num("spmm_forward_ms", b.forward_ms)
      .num("spmm_backward_ms", b.backward_ms)
      .num("spmv_forward_ms", b.spmv_ms);
  cs.num("spmv_backward_ms", spmv_backward_ms)
      .num("fp_bp_per_image_ms", b.fp_bp_per_image(o.slices));
  cs.num("cg_iteration_ms_per_image", b.cg_ms)
      .num("cg_solve_ms_per_iteration_image", b.cg_solve_ms)
      .num("effective_spmv_gbs", bytes / (b.spmv_ms * 1e-3) / 1e9);
  cs.num("cg20_relative_error", b.error32);
  if (o.accuracy) {
    const SliceAccuracy spread = compare_slices(b.slice_errors32, b.error32, {});
    cs.num("cg20_all_slices_furthest_relative_error", spread.furthest_error);
    std::printf(
        "  cuSPARSE CG %d iterations, %d slices at once: slice furthest from slice 0 alone "
        "%.5f (%+.3f%% vs %.5f)\n",
        o.accuracy_iterations, o.slices, spread.furthest_error, 100 * spread.vs_fp32, b.error32);
  }
  std::printf(
      "  cuSPARSE: A.X %.3f ms, A^T.Y %.3f ms (%d columns) -> FP+BP %.4f ms/image; SpMV %.3f "
      "ms (%.0f GB/s); CG %.4f ms/image/iter\n"
      "            %s\n",
      b.forward_ms, b.backward_ms, o.slices, b.fp_bp_per_image(o.slices), b.spmv_ms,
      bytes / (b.spmv_ms * 1e-3) / 1e9, b.cg_ms, csr.configuration().c_str());
  return cs;
}

}  // namespace slicestream::tensorcore::bench
