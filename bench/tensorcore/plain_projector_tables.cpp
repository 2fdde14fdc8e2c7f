// The plain (non-symmetric) Tensor Core projector over all slices for every ordering and fragment
// shape: FP, BP, their SpMMs alone, effective bandwidth and CG per image, against cuSPARSE.
#include <cstdio>
#include <memory>
#include <string>

#include "kernels/steady_clock.hpp"
#include "bench/tensorcore/projector_timing.hpp"
#include "bench/tensorcore/tensorcore_bench_run.hpp"

namespace slicestream::tensorcore::bench {

Json plain_projector_tables(SizeRun& run, const CusparseBaseline& baseline, BestProjector* best) {
  const Options& o = run.o;
  const double cusparse_fp_bp = baseline.fp_bp_per_image(o.slices);
  Json tcj;
  for (BlockOrdering ordering : {BlockOrdering::kPseudoMorton, BlockOrdering::kRaySheared}) {
    if (!selected(o.orderings, to_string(ordering))) continue;
    Json oj;
    for (WmmaShape shape : selected_shapes(o)) {
      const TensorCoreMatrixOptions options{shape, ordering, false};
      const auto tb = ::slicestream::SteadyClock::now();
      auto m = std::make_shared<const TensorCoreMatrix>(
          build_tensorcore_matrix(run.pool, run.a, run.geometry(), run.grid(), options, nullptr));
      const double build_s = ::slicestream::seconds_since(tb);
      cuda::TensorCoreProjector tc(m);
      const ProjectorTimes t = measure_projector(tc, run, o.cg);
      const double fpbp = t.fp_bp_per_image(o.slices);
      Json j = to_json(t);
      j.num("build_s", build_s)
          .num("fp_bp_per_image_ms", fpbp)
          .num("speedup_vs_cusparse_fp_bp", cusparse_fp_bp / fpbp);
      j.num("speedup_vs_cusparse_cg", baseline.cg_ms / t.cg_ms);
      oj.obj(to_string(shape), j);
      std::printf(
          "  TC %-13s %-8s %.2f GB: FP %.3f (SpMM %.3f, %4.0f GB/s) BP %.3f (SpMM %.3f, %4.0f "
          "GB/s) ms -> FP+BP %.4f ms/image (%.2fx cuSPARSE); CG %.4f ms/image/iter (%.2fx)\n",
          to_string(ordering), to_string(shape), t.bytes / 1e9, t.fwd_ms, t.spmm_fwd_ms, t.fwd_gbs,
          t.bwd_ms, t.spmm_bwd_ms, t.bwd_gbs, fpbp, cusparse_fp_bp / fpbp, t.cg_ms,
          baseline.cg_ms / t.cg_ms);
      if (fpbp < best->fp_bp_per_image_ms) {
        best->fp_bp_per_image_ms = fpbp;
        best->name = std::string(to_string(ordering)) + " " + to_string(shape);
        best->matrix = m;
      }
    }
    tcj.obj(to_string(ordering), oj);
  }
  return tcj;
}

}  // namespace slicestream::tensorcore::bench
