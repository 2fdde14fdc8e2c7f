// The 8-fold symmetric projector: single-image FP (the paper's Tables 6/7) and all slices at once
// in the column form (8 columns per slice), then the gathered products (one column per slice)
// with an optional sweep of the gathered kernel's CTA count, their CG accuracy and the
// compensated CG's time.
#include <array>
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

// CG accuracy through the gathered products: all slices at once, fp16, compensated and
// forward-only compensated operands, against the fp32 (cuSPARSE) error of the accuracy table;
// the compensated solvers' times.
void gathered_cg_accuracy(SizeRun& run, const std::shared_ptr<const TensorCoreMatrix>& m,
                          const CusparseBaseline& baseline, Json* gj) {
  const Options& o = run.o;
  const double error32 = baseline.error32;
  const std::array<double, 3> errors = cg_errors_by_operands(
      m, {}, run.problem.data, o.slices, run.problem.truth, o.accuracy_iterations, run.stream);
  // The compensated solvers: both directions run 64 product columns, forward-only compensation
  // 64 forward and 32 backward.
  double cg_c = 0;
  double cg_f = 0;
  if (o.cg) {
    cuda::TensorCoreProjectorOptions compensated;
    compensated.compensated_operands = true;
    cuda::TensorCoreProjector tc(m, compensated);
    cg_c = cg_iteration_ms(tc, run.cg_b.data(), o.slices, o.cg_iterations, run.stream);
    compensated.compensate_backward = false;
    cuda::TensorCoreProjector forward_only(m, compensated);
    cg_f = cg_iteration_ms(forward_only, run.cg_b.data(), o.slices, o.cg_iterations, run.stream);
  }
  gj->num("cg20_worst_slice_relative_error", errors[0])
      .num("cg20_compensated_worst_slice_relative_error", errors[1])
      .num("cg20_forward_compensated_worst_slice_relative_error", errors[2])
      .num("fp32_relative_error", error32);
  if (o.cg) {
    gj->num("compensated_cg_ms_per_image", cg_c)
        .num("compensated_speedup_vs_cusparse_cg", baseline.cg_ms / cg_c)
        .num("forward_compensated_cg_ms_per_image", cg_f)
        .num("forward_compensated_speedup_vs_cusparse_cg", baseline.cg_ms / cg_f);
  }
  auto percent = [&](double e) { return 100 * (e - error32) / error32; };
  std::printf(
      "    gathered CG %d iterations, %d slices at once, worst slice: fp16 operands %.5f "
      "(%+.2f%% vs fp32 %.5f), compensated %.5f (%+.3f%%), forward only %.5f (%+.3f%%); "
      "compensated CG %.4f ms/image/iter (%.2fx cuSPARSE), forward only %.4f (%.2fx)\n",
      o.accuracy_iterations, o.slices, errors[0], percent(errors[0]), error32, errors[1],
      percent(errors[1]), errors[2], percent(errors[2]), cg_c, o.cg ? baseline.cg_ms / cg_c : 0.0,
      cg_f, o.cg ? baseline.cg_ms / cg_f : 0.0);
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
  if (o.accuracy && baseline.error32 > 0) gathered_cg_accuracy(run, m, baseline, &gj);
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

}  // namespace

Json symmetric_tables(SizeRun& run, const CusparseBaseline& baseline, int multiprocessors) {
  const Options& o = run.o;
  const auto plan =
      std::make_shared<const SymmetryPlan>(make_symmetry_plan(run.geometry(), run.grid()));
  DdMatrixOptions dd;
  dd.column_factors = &plan->column_factor;
  const CsrMatrix a_oct = build_dd_matrix(run.pool, run.geometry(), run.grid(), dd);
  Json sj;
  for (WmmaShape shape : selected_shapes(o)) {
    const TensorCoreMatrixOptions options{shape, BlockOrdering::kPseudoMorton, true};
    const auto m = std::make_shared<const TensorCoreMatrix>(
        build_tensorcore_matrix(run.pool, a_oct, run.geometry(), run.grid(), options, plan));
    Json j = column_form(run, m, baseline);
    if (const auto gathered = gathered_products(run, m, baseline, multiprocessors)) {
      j.obj("gathered", *gathered);
    }
    sj.obj(to_string(shape), j);
  }
  return sj;
}

}  // namespace slicestream::tensorcore::bench
