// The 8-fold symmetric projector: single-image FP (the paper's Tables 6/7) and all slices at once
// in the column form (8 columns per slice), then the gathered products (one column per slice)
// with an optional sweep of the gathered kernel's CTA count, their CG accuracy and the
// compensated CG's time.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "bench/tensorcore/cg_measurements.hpp"
#include "bench/tensorcore/projector_timing.hpp"
#include "bench/tensorcore/tensorcore_bench_run.hpp"
#include "kernels/tensorcore/square_symmetry.hpp"

namespace slicestream::tensorcore::bench {
namespace {

// The SpMMs alone with `ctas_per_sm` persistent CTAs per SM, on the benchmark's own operands.
void sweep_gathered_ctas(SizeRun& run, const std::shared_ptr<const TensorCoreMatrix>& m,
                         int multiprocessors, Json* gj) {
  const Options& o = run.o;
  for (int per_sm : o.gathered_ctas) {
    cuda::TensorCoreProjectorOptions options;
    options.gathered_ctas = per_sm * multiprocessors;
    cuda::TensorCoreProjector tc(m, options);
    tc.forward(run.image.data(), run.sino.data(), o.slices, run.stream);
    const double f = median_ms(run, [&] { tc.repeat_last_product(run.stream); });
    tc.backward(run.sino_in.data(), run.image_out.data(), o.slices, run.stream);
    const double b = median_ms(run, [&] { tc.repeat_last_product(run.stream); });
    gj->num("spmm_fwd_ms_ctas_per_sm_" + std::to_string(per_sm), f)
        .num("spmm_bwd_ms_ctas_per_sm_" + std::to_string(per_sm), b);
    std::printf("    gathered SpMMs with %2d CTAs per SM: FP %.3f BP %.3f ms\n", per_sm, f, b);
  }
}

// CG accuracy through the gathered products: all slices at once, every operand variant
// (cg_measurements.hpp) against the fp32 (cuSPARSE) error of the accuracy table; with `timed`,
// the CG times of the variants beside cuSPARSE's: per iteration once the accurate start is over,
// and per iteration of a whole solve of the accuracy table's length.
void gathered_cg_accuracy(SizeRun& run, const std::shared_ptr<const TensorCoreMatrix>& m,
                          const CusparseBaseline& baseline, bool timed, Json* gj) {
  const Options& o = run.o;
  const double error32 = baseline.error32;
  gj->num("fp32_relative_error", error32);
  std::printf("    gathered CG %d iterations, %d slices at once, slice furthest from fp32 %.5f:",
              o.accuracy_iterations, o.slices, error32);
  const std::vector<OperandVariant> variants = operand_variants(o.accurate_iterations);
  for (const OperandVariant& v : variants) {
    const SliceAccuracy a =
        compare_slices(cg_errors_of(v, m, run.problem.data, o.slices, run.problem.truth,
                                    o.accuracy_iterations, run.stream),
                       error32, baseline.slice_errors32);
    gj->num("cg20_furthest_slice_relative_error_" + v.key(), a.furthest_error)
        .num("cg20_furthest_vs_same_slice_" + v.key(), a.vs_same_slice);
    std::printf("%s %s %.5f (%+.3f%%; same slice %+.3f%%)", &v == &variants.front() ? "" : ",",
                v.name().c_str(), a.furthest_error, 100 * a.vs_fp32, 100 * a.vs_same_slice);
  }
  std::printf("\n");
  if (!timed) return;
  std::printf(
      "    gathered CG ms per image and iteration, after the start / whole %d-iteration "
      "solve (x cuSPARSE %.4f / %.4f):",
      o.accuracy_iterations, baseline.cg_ms, baseline.cg_solve_ms);
  for (const OperandVariant& v : variants) {
    cuda::TensorCoreProjector tc(m, v.projector());
    const CgTimes t = cg_times(tc, run.cg_b.data(), o.slices, o.cg_iterations,
                               o.accuracy_iterations, run.stream, v.accurate_iterations);
    const std::string key = v.key();
    gj->num("cg_iteration_ms_per_image_" + key, t.iteration_ms)
        .num("cg_speedup_vs_cusparse_" + key, baseline.cg_ms / t.iteration_ms)
        .num("cg_solve_ms_per_iteration_image_" + key, t.solve_ms)
        .num("cg_solve_speedup_vs_cusparse_" + key, baseline.cg_solve_ms / t.solve_ms);
    std::printf("%s %s %.4f / %.4f (%.2fx / %.2fx)", &v == &variants.front() ? "" : ",",
                v.name().c_str(), t.iteration_ms, t.solve_ms, baseline.cg_ms / t.iteration_ms,
                baseline.cg_solve_ms / t.solve_ms);
  }
  std::printf("\n");
  std::fflush(stdout);
}

// The gathered products (symmetric_gather.hpp) of one shape: times, CTA sweep, CG accuracy;
// nothing where the matrix or the slice count does not take them.
std::optional<Json> gathered_products(SizeRun& run,
                                      const std::shared_ptr<const TensorCoreMatrix>& m,
                                      const CusparseBaseline& baseline, int multiprocessors) {
  const Options& o = run.o;
  const double cusparse_fp_bp = baseline.fp_bp_per_image(o.slices);
  cuda::TensorCoreProjector tc(m);
  if (!tc.uses_gathered_products(o.slices)) return std::nullopt;
  const ProjectorTimes g = measure_projector(tc, run, o.cg);
  const double g_fpbp = g.fp_bp_per_image(o.slices);
  Json gj = to_json(g);
  gj.num("fp_bp_per_image_ms", g_fpbp).num("speedup_vs_cusparse_fp_bp", cusparse_fp_bp / g_fpbp);
  if (o.cg) gj.num("speedup_vs_cusparse_cg", baseline.cg_ms / g.cg_ms);
  sweep_gathered_ctas(run, m, multiprocessors, &gj);
  if (o.accuracy && baseline.error32 > 0) gathered_cg_accuracy(run, m, baseline, o.cg, &gj);
  std::printf(
      "  8-sym gathered %-8s: %d slices FP %.3f (SpMM %.3f) BP %.3f (SpMM %.3f) ms -> "
      "%.4f ms/image (%.2fx cuSPARSE), CG %.4f ms/image/iter (%.2fx)\n",
      to_string(m->options.shape), o.slices, g.fwd_ms, g.spmm_fwd_ms, g.bwd_ms, g.spmm_bwd_ms,
      g_fpbp, cusparse_fp_bp / g_fpbp, g.cg_ms, o.cg ? baseline.cg_ms / g.cg_ms : 0.0);
  std::fflush(stdout);
  return gj;
}

// The column form (the paper's): one image, then all slices with 8 columns each.
Json column_form(SizeRun& run, const std::shared_ptr<const TensorCoreMatrix>& m,
                 const CusparseBaseline& baseline) {
  const Options& o = run.o;
  const double cusparse_fp_bp = baseline.fp_bp_per_image(o.slices);
  cuda::TensorCoreProjectorOptions options;
  options.gathered_symmetry = false;
  cuda::TensorCoreProjector tc(m, options);
  const double fp1 =
      median_ms(run, [&] { tc.forward(run.image.data(), run.sino.data(), 1, run.stream); });
  const double fp1_spmm = median_ms(run, [&] { tc.repeat_last_product(run.stream); });
  const ProjectorTimes t = measure_projector(tc, run, o.cg);
  const double fpbp = t.fp_bp_per_image(o.slices);
  Json j = to_json(t);
  j.num("single_image_forward_ms", fp1).num("single_image_spmm_ms", fp1_spmm);
  j.num("speedup_vs_cusparse_spmv", baseline.spmv_ms / fp1).num("fp_bp_per_image_ms", fpbp);
  j.num("speedup_vs_cusparse_fp_bp", cusparse_fp_bp / fpbp)
      .num("speedup_vs_cusparse_cg", baseline.cg_ms / t.cg_ms);
  std::printf(
      "  8-sym %-8s %.3f GB: 1-image FP %.4f ms (SpMM %.4f) = %.2fx SpMV; %d slices FP %.3f "
      "BP %.3f ms -> %.4f ms/image (%.2fx), CG %.4f ms/image/iter (%.2fx)\n",
      to_string(m->options.shape), t.bytes / 1e9, fp1, fp1_spmm, baseline.spmv_ms / fp1, o.slices,
      t.fwd_ms, t.bwd_ms, fpbp, cusparse_fp_bp / fpbp, t.cg_ms, baseline.cg_ms / t.cg_ms);
  std::fflush(stdout);
  return j;
}

// The 8-fold symmetric matrix of `shape` (pseudo-Morton, as the tables use it).
std::shared_ptr<const TensorCoreMatrix> symmetric_matrix(SizeRun& run, WmmaShape shape) {
  const auto plan =
      std::make_shared<const SymmetryPlan>(make_symmetry_plan(run.geometry(), run.grid()));
  DdMatrixOptions dd;
  dd.column_factors = &plan->column_factor;
  const CsrMatrix a_oct = build_dd_matrix(run.pool, run.geometry(), run.grid(), dd);
  const TensorCoreMatrixOptions options{shape, BlockOrdering::kPseudoMorton, true};
  return std::make_shared<const TensorCoreMatrix>(
      build_tensorcore_matrix(run.pool, a_oct, run.geometry(), run.grid(), options, plan));
}

}  // namespace

Json gathered_accuracy(SizeRun& run, const CusparseBaseline& baseline) {
  Json gj;
  const auto m = symmetric_matrix(run, WmmaShape::kM16N16K16);
  if (!cuda::TensorCoreProjector(m).uses_gathered_products(run.o.slices)) return gj;
  gathered_cg_accuracy(run, m, baseline, false, &gj);
  return gj;
}

Json symmetric_tables(SizeRun& run, const CusparseBaseline& baseline, int multiprocessors) {
  const Options& o = run.o;
  Json sj;
  for (WmmaShape shape : selected_shapes(o)) {
    const auto m = symmetric_matrix(run, shape);
    Json j = column_form(run, m, baseline);
    if (const auto gathered = gathered_products(run, m, baseline, multiprocessors)) {
      j.obj("gathered", *gathered);
    }
    sj.obj(to_string(shape), j);
  }
  return sj;
}

}  // namespace slicestream::tensorcore::bench
