// CG accuracy with the fastest fp16 configuration (a fixed one without the timing tables)
// against fp32 (cuSPARSE), 20 iterations, with fp16 and with compensated (hi + lo fp16)
// operands, split accumulation on (the default) and off, compensated forward operands only over
// all slices; and the compensated CG's time.
#include <array>
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
           const double (&errors)[2][2], const std::array<double, 3>& slices_errors, double cg_c,
           double cusparse_cg) {
  const Options& o = run.o;
  auto difference = [&](double e) { return (e - error32) / error32; };
  std::printf(
      "  CG %d iterations, %d slices at once, %s, worst slice: fp16 operands %.5f (%+.2f%%), "
      "compensated %.5f (%+.3f%%), compensated forward operands only %.5f (%+.3f%%)\n",
      o.accuracy_iterations, o.slices, name.c_str(), slices_errors[0],
      100 * difference(slices_errors[0]), slices_errors[1], 100 * difference(slices_errors[1]),
      slices_errors[2], 100 * difference(slices_errors[2]));
  std::printf(
      "  CG %d iterations on the phantom, fp16 %s: fp32 error %.5f; split accumulation: "
      "fp16 operands %.5f (%+.2f%%), compensated %.5f (%+.3f%%); one chain per output (the "
      "kernels before the split): fp16 %.5f (%+.2f%%), compensated %.5f (%+.3f%%); "
      "compensated CG %.4f ms/image/iter (%.2fx cuSPARSE)\n",
      o.accuracy_iterations, name.c_str(), error32, errors[0][1], 100 * difference(errors[0][1]),
      errors[1][1], 100 * difference(errors[1][1]), errors[0][0], 100 * difference(errors[0][0]),
      errors[1][0], 100 * difference(errors[1][0]), cg_c, cusparse_cg / cg_c);
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
          cg_error_slices(tc, data, 1, truth, o.accuracy_iterations, stream);
    }
  }
  // The same solver over all slices at once (the multi-slice kernels).
  const std::array<double, 3> slices_errors =
      cg_errors_by_operands(best.matrix, {}, data, o.slices, truth, o.accuracy_iterations, stream);
  cuda::TensorCoreProjectorOptions compensated;
  compensated.compensated_operands = true;
  cuda::TensorCoreProjector tc(best.matrix, compensated);
  const double cg_c = cg_iteration_ms(tc, run.cg_b.data(), o.slices, o.cg_iterations, stream);
  const double error32 = baseline.error32;
  auto difference = [&](double e) { return (e - error32) / error32; };
  print(run, best.name, error32, errors, slices_errors, cg_c, baseline.cg_ms);
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
      .num("all_slices_fp16_worst_relative_error", slices_errors[0])
      .num("all_slices_compensated_worst_relative_error", slices_errors[1])
      .num("all_slices_forward_compensated_worst_relative_error", slices_errors[2])
      .num("compensated_cg_iteration_ms_per_image", cg_c)
      .num("cusparse_cg_iteration_ms_per_image", baseline.cg_ms)
      .num("compensated_speedup_vs_cusparse_cg", baseline.cg_ms / cg_c);
}

}  // namespace slicestream::tensorcore::bench
