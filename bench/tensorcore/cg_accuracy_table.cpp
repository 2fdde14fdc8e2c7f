// CG accuracy with the fastest fp16 configuration (a fixed one without the timing tables)
// against fp32 (cuSPARSE), 20 iterations, with fp16 and with compensated (hi + lo fp16)
// operands, split accumulation on (the default) and off; over all slices at once every operand
// variant (cg_measurements.hpp: fp16, compensated both ways or forward only, compensated for an
// accurate start and fp16 after); and the compensated CG's time.
#include <cstdio>
#include <memory>
#include <string>

#include "bench/tensorcore/cg_measurements.hpp"
#include "bench/tensorcore/tensorcore_bench_run.hpp"

namespace slicestream::tensorcore::bench {
namespace {

// The accuracy table's solver configuration where no timing picked the fastest one.
constexpr WmmaShape kAccuracyShape = WmmaShape::kM16N16K16;
constexpr BlockOrdering kAccuracyOrdering = BlockOrdering::kRaySheared;

void print(const SizeRun& run, const std::string& name, double error32,
           const double (&errors)[2][2], double cg_c, double cusparse_cg) {
  const Options& o = run.o;
  auto difference = [&](double e) { return 100 * (e - error32) / error32; };
  std::printf(
      "  CG %d iterations on the phantom, fp16 %s: fp32 error %.5f; split accumulation: "
      "fp16 operands %.5f (%+.2f%%), compensated %.5f (%+.3f%%); one chain per output (the "
      "kernels before the split): fp16 %.5f (%+.2f%%), compensated %.5f (%+.3f%%); "
      "compensated CG %.4f ms/image/iter (%.2fx cuSPARSE)\n",
      o.accuracy_iterations, name.c_str(), error32, errors[0][1], difference(errors[0][1]),
      errors[1][1], difference(errors[1][1]), errors[0][0], difference(errors[0][0]), errors[1][0],
      difference(errors[1][0]), cg_c, cusparse_cg / cg_c);
}

// The same solver over all slices at once (the multi-slice kernels), every operand variant; the
// slice furthest from fp32 per variant.
Json all_slices(SizeRun& run, const CusparseBaseline& baseline, const BestProjector& best) {
  const Options& o = run.o;
  const double error32 = baseline.error32;
  Json j;
  std::printf("  CG %d iterations, %d slices at once, %s, slice furthest from fp32:",
              o.accuracy_iterations, o.slices, best.name.c_str());
  const std::vector<OperandVariant> variants = operand_variants(o.accurate_iterations);
  for (const OperandVariant& v : variants) {
    const SliceAccuracy a =
        compare_slices(cg_errors_of(v, best.matrix, run.problem.data, o.slices, run.problem.truth,
                                    o.accuracy_iterations, run.stream),
                       error32, baseline.slice_errors32);
    j.num(v.key(), a.furthest_error).num(v.key() + "_vs_same_slice", a.vs_same_slice);
    std::printf("%s %s %.5f (%+.3f%%; same slice %+.3f%%)", &v == &variants.front() ? "" : ",",
                v.name().c_str(), a.furthest_error, 100 * a.vs_fp32, 100 * a.vs_same_slice);
  }
  std::printf("\n");
  return j;
}

}  // namespace

Json cg_accuracy_table(SizeRun& run, const CusparseBaseline& baseline, BestProjector best) {
  const Options& o = run.o;
  const cudaStream_t stream = run.stream;
  const std::vector<float>& data = run.problem.data;
  const std::vector<float>& truth = run.problem.truth;
  if (best.matrix == nullptr) {
    TensorCoreMatrixOptions options;
    options.shape = kAccuracyShape;
    options.ordering = kAccuracyOrdering;
    best.matrix = std::make_shared<const TensorCoreMatrix>(
        build_tensorcore_matrix(run.pool, run.a, run.geometry(), run.grid(), options, nullptr));
    best.name = std::string(to_string(kAccuracyOrdering)) + " " + to_string(kAccuracyShape);
  }
  double errors[2][2];  // [compensated][split]
  for (int compensated = 0; compensated < 2; ++compensated) {
    for (int split = 0; split < 2; ++split) {
      cuda::TensorCoreProjectorOptions options;
      options.compensated_operands = compensated != 0;
      options.split_accumulation = split != 0;
      cuda::TensorCoreProjector tc(best.matrix, options);
      errors[compensated][split] =
          cg_error_slices(tc, data, 1, truth, o.accuracy_iterations, baseline.error32, stream);
    }
  }
  const Json slices_errors = all_slices(run, baseline, best);
  cuda::TensorCoreProjectorOptions compensated;
  compensated.compensated_operands = true;
  cuda::TensorCoreProjector tc(best.matrix, compensated);
  const double cg_c = cg_iteration_ms(tc, run.cg_b.data(), o.slices, o.cg_iterations, stream);
  const double error32 = baseline.error32;
  auto difference = [&](double e) { return (e - error32) / error32; };
  print(run, best.name, error32, errors, cg_c, baseline.cg_ms);
  return Json()
      .str("fp16_configuration", best.name)
      .num("iterations", o.accuracy_iterations)
      .num("fp32_relative_error", error32)
      .num("fp16_relative_error", errors[0][1])
      .num("relative_difference", difference(errors[0][1]))
      .num("compensated_relative_error", errors[1][1])
      .num("compensated_relative_difference", difference(errors[1][1]))
      .num("unsplit_fp16_relative_error", errors[0][0])
      .num("unsplit_relative_difference", difference(errors[0][0]))
      .num("unsplit_compensated_relative_error", errors[1][0])
      .num("unsplit_compensated_relative_difference", difference(errors[1][0]))
      .obj("all_slices_furthest_relative_error", slices_errors)
      .num("compensated_cg_iteration_ms_per_image", cg_c)
      .num("cusparse_cg_iteration_ms_per_image", baseline.cg_ms)
      .num("compensated_speedup_vs_cusparse_cg", baseline.cg_ms / cg_c);
}

}  // namespace slicestream::tensorcore::bench
