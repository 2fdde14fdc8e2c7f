// The CUDA backend's slice refiner (Tensor Core fp16 BSR matrix, GPU CGLS) against the CPU
// backend's (fp32 CSR matrix, CPU CGLS) on axial slices of a parallel-beam phantom scan and on
// the central (fan-beam) slice of a cone-beam one, the refiners' place in the device memory
// budget, and the CUDA backend's read_rows and refinement through the whole pipeline on both.
// Skips without a usable GPU.
//
// Tolerances: the fp16 matrix stores every weight to 2^-11 (4.9e-4) relative; the operands
// travel as hi + lo fp16 pairs (about 22 bits) and the kernels sum in short chains (split
// accumulation), so one product A x differs from fp32 by a few 1e-4 of ||b||: residuals (in
// units of ||b||) agree to 2e-3. CGLS amplifies differences a little with every iteration, so the
// refined slices after 10 iterations must agree with the CPU's to 2e-3 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "pipeline/backend/backend.hpp"
#include "pipeline/backend/cuda/cuda_backend.hpp"
#include "pipeline/refinement/refinement_plan.hpp"
#include "tests/pipeline/backend/require_cuda_backend.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream {
namespace {

constexpr double kPixelMm = 0.5;
constexpr double kResidualTolerance = 2e-3;  // absolute, in units of ||b||
constexpr double kSliceTolerance = 2e-3;     // relative, after 10 iterations

std::unique_ptr<Backend> cuda_backend() {
  BackendOptions options;
  return make_backend(BackendKind::kCuda, options);
}

// A smooth under- and overshooting start value, as an FBP image is: the phantom scaled and
// rippled.
std::vector<float> fbp_like(const std::vector<float>& truth, int width) {
  std::vector<float> x(truth.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double col = static_cast<double>(i % static_cast<std::size_t>(width));
    const double row = static_cast<double>(i / static_cast<std::size_t>(width));
    x[i] = static_cast<float>(0.9 * truth[i] + 0.001 * std::sin(0.3 * col) * std::cos(0.2 * row));
  }
  return x;
}

// The GPU refiner of every slice agrees with the CPU refiner: residuals, and 10 CGLS iterations
// from an FBP-like image and from zero.
void expect_refiners_agree(const test::TestScan& scan, const std::vector<SetSliceCommand>& slices) {
  std::unique_ptr<Backend> gpu = cuda_backend();
  CpuBackend cpu(CpuBackendOptions{2, 0});
  for (const SetSliceCommand& slice : slices) {
    SCOPED_TRACE("slice " + std::to_string(slice.slice_id));
    RefinementPlan plan;
    ASSERT_FALSE(plan_refinement(slice, scan.description.geometry, &plan));
    const SinogramWindow window = test::phantom_sinogram(scan, plan);
    const RefinementSetup setup = refinement_setup(plan, scan.description.geometry);
    ASSERT_EQ(setup.geometry.beam, scan.description.geometry.beam);
    std::unique_ptr<SliceRefiner> on_gpu = gpu->create_refiner(setup);
    std::unique_ptr<SliceRefiner> on_cpu = cpu.create_refiner(setup);
    EXPECT_EQ(on_gpu->solver().rfind("cuda tensor-core fp16", 0), 0u) << on_gpu->solver();
    EXPECT_GT(on_gpu->matrix_bytes(), 0u);
    const std::vector<float> truth =
        phantom::sample(scan.phantom, slice_grid(slice.orientation, slice.width, slice.height), 3);
    const float* b = window.values().data();
    EXPECT_NEAR(on_gpu->residual(truth.data(), b), on_cpu->residual(truth.data(), b),
                kResidualTolerance);
    // The default (FISTA, TV, x >= 0; no noise level: all iterations) and plain CGLS.
    for (const auto& [settings, from_zero] :
         {std::pair{RefinementSettings{}, false}, std::pair{plain_cgls_settings(), false},
          std::pair{plain_cgls_settings(), true}}) {
      SCOPED_TRACE(std::string(to_string(settings.method)) +
                   (from_zero ? " from zero" : " from an FBP-like image"));
      const std::vector<float> x0 =
          from_zero ? std::vector<float>(truth.size(), 0.0f) : fbp_like(truth, slice.width);
      std::vector<float> x_gpu(x0.size()), x_cpu(x0.size());
      const RefinementRequest request{10, settings};
      const RefinementResult r_gpu = on_gpu->refine(x0.data(), b, request, x_gpu.data());
      const RefinementResult r_cpu = on_cpu->refine(x0.data(), b, request, x_cpu.data());
      EXPECT_EQ(r_gpu.summary.stop_reason, r_cpu.summary.stop_reason);
      EXPECT_EQ(r_gpu.summary.method, to_string(settings.method));
      std::printf(
          "%s slice %u %s: residual %.5f -> %.5f (gpu), %.5f -> %.5f (cpu), slices differ "
          "by %.2e\n",
          to_string(setup.geometry.beam), slice.slice_id, from_zero ? "from zero" : "from FBP-like",
          r_gpu.residual_before, r_gpu.residual_after, r_cpu.residual_before, r_cpu.residual_after,
          test::relative_error(x_gpu, x_cpu));
      EXPECT_EQ(r_gpu.iterations, 10);
      EXPECT_NEAR(r_gpu.residual_before, r_cpu.residual_before, kResidualTolerance);
      EXPECT_NEAR(r_gpu.residual_after, r_cpu.residual_after, kResidualTolerance);
      EXPECT_LT(r_gpu.residual_after, r_gpu.residual_before);
      EXPECT_LT(test::relative_error(x_gpu, x_cpu), kSliceTolerance);
    }
  }
}

TEST(SliceRefinerGpu, MatchesTheCpuRefiner) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  const test::TestScan scan =
      test::make_parallel_scan(1, {16, 128}, 180, PixelType::kUint16, 2, 2, kPixelMm);
  expect_refiners_agree(
      scan,
      {
          test::axial_slice(scan.description, 1, 128),                   // centred, between rows
          test::axial_slice_at(2, 96, 0.6, 1.5, -2.0, 1.25, 0.7, true),  // rotated, mirrored, a row
      });
}

// The central slice of a cone-beam scan: a fan-beam matrix on both backends.
TEST(SliceRefinerGpu, MatchesTheCpuRefinerOnAConeBeamCentralSlice) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  const test::TestScan scan = test::make_cone_scan(4, {16, 128}, 180, 300, 200);
  expect_refiners_agree(scan, {
                                  test::axial_slice(scan.description, 1, 96),
                                  test::axial_slice_at(2, 80, 1.0, 2.0, -1.0, 0, 0.4, true),
                              });
}

// The CUDA refiner holds at most its estimate beside the matrix (kCudaOperandBytesPerRay /
// PerPixel are allowances this checks), charges what it holds to the backend's budget while it
// lives, allocates nothing per solve, and a backend without room refuses it with the numbers.
TEST(SliceRefinerGpu, RefinersAreInsideTheDeviceBudget) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  const test::TestScan scan =
      test::make_parallel_scan(6, {16, 128}, 180, PixelType::kUint16, 2, 2, kPixelMm);
  RefinementPlan plan;
  ASSERT_FALSE(plan_refinement(test::axial_slice(scan.description, 1, 128),
                               scan.description.geometry, &plan));
  const RefinementSetup setup = refinement_setup(plan, scan.description.geometry);
  std::unique_ptr<Backend> gpu = cuda_backend();
  EXPECT_EQ(gpu->refiner_memory_problem(setup), "");
  std::unique_ptr<SliceRefiner> refiner = gpu->create_refiner(setup);
  const std::size_t held = refiner->memory_bytes();
  EXPECT_EQ(gpu->info().memory_used_by_refiners_bytes, held);
  const std::size_t estimate = estimated_cuda_refiner_bytes(setup);
  const std::size_t estimated_matrix = estimated_matrix_bytes(setup);
  std::printf("refiner: matrix %zu (estimated %zu), the rest %zu (estimated %zu) bytes\n",
              refiner->matrix_bytes(), estimated_matrix, held - refiner->matrix_bytes(),
              estimate - estimated_matrix);
  EXPECT_LE(held - refiner->matrix_bytes(), estimate - estimated_matrix);
  std::vector<float> x(static_cast<std::size_t>(setup.grid.pixels()), 0.0f);
  std::vector<float> b(static_cast<std::size_t>(setup.geometry.rays()), 1.0f);
  for (int k = 0; k < 2; ++k)
    for (const RefinementSettings& settings : {RefinementSettings{}, plain_cgls_settings()})
      refiner->refine(x.data(), b.data(), RefinementRequest{10, settings}, x.data());
  refiner->residual(x.data(), b.data());
  EXPECT_EQ(refiner->memory_bytes(), held) << "nothing allocated per solve";
  refiner.reset();
  EXPECT_EQ(gpu->info().memory_used_by_refiners_bytes, 0u);

  // Everything reserved: refused at request time and at creation, with the numbers.
  CudaBackendOptions greedy;
  greedy.reserve_bytes = gpu->info().memory_total_bytes;
  CudaBackend full(0, greedy);
  const std::string problem = full.refiner_memory_problem(setup);
  EXPECT_NE(problem.find("stay reserved"), std::string::npos) << problem;
  // No refiner is built without room for it.
  test::expect_backend_error([&] { full.create_refiner(setup); }, "stay reserved");
}

// read_rows of one preprocessed frame agrees between the backends.
void expect_read_rows_match(const test::TestScan& scan) {
  ScanSetup setup;
  setup.geometry = scan.description.geometry;
  setup.pixel_type = PixelType::kFloat32;
  setup.preprocess.already_linear = true;
  setup.projections_in_flight = 4;
  std::unique_ptr<Backend> gpu = cuda_backend();
  CpuBackend cpu(CpuBackendOptions{2, 0});
  gpu->begin_scan(setup);
  cpu.begin_scan(setup);
  std::mt19937 rng(3);
  const RawFrame frame = test::make_random_frame(scan.description, 0, rng);
  const ProjectionVector& vector = scan.description.geometry.vectors[0];
  std::unique_ptr<ProjectionBuffer> on_gpu = gpu->preprocess(frame.view(), vector);
  std::unique_ptr<ProjectionBuffer> on_cpu = cpu.preprocess(frame.view(), vector);
  std::vector<float> rows_gpu(3 * 40, -1.0f), rows_cpu(3 * 40, -2.0f);
  gpu->read_rows(*on_gpu, 5, 3, rows_gpu.data());
  cpu.read_rows(*on_cpu, 5, 3, rows_cpu.data());
  for (std::size_t i = 0; i < rows_cpu.size(); ++i)
    ASSERT_NEAR(rows_gpu[i], rows_cpu[i], 1e-6f) << "value " << i;
  EXPECT_THROW(gpu->read_rows(*on_gpu, 11, 2, rows_gpu.data()), BackendError);
  gpu->end_scan();
  cpu.end_scan();
}

// Also for a cone beam, whose rows carry the FDK cosine pre-weight that the sinogram window
// divides out with the CPU's formula.
TEST(SliceRefinerGpu, ReadRowsMatchesTheCpuBackend) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  for (const test::TestScan& scan :
       {test::make_parallel_scan(3, {12, 40}, 8, PixelType::kFloat32),
        test::make_cone_scan(3, {12, 40}, 8, 60, 40, PixelType::kFloat32)}) {
    SCOPED_TRACE(to_string(scan.description.geometry.beam));
    expect_read_rows_match(scan);
  }
}

// Refinement of `slice` on the CUDA backend through the whole pipeline, with `settings`: plain
// CGLS must fit the data much better than the FBP image; the default (FISTA, x >= 0, TV,
// discrepancy stop) trades some fit for the object and says so in its summary. Both must come
// closer to the object than the FBP image, as on the CPU backend (refinement_test.cpp).
void expect_refined_through_pipeline(const test::TestScan& scan, const SetSliceCommand& slice,
                                     const RefinementSettings& settings) {
  const bool plain_cgls = settings.method == RefinementMethod::kCgls;
  SCOPED_TRACE(plain_cgls ? "plain CGLS" : "default settings");
  test::RecordingSink sink;
  Pipeline pipeline(test::small_config(), cuda_backend(), sink);
  pipeline.start();
  ASSERT_TRUE(test::call(pipeline, slice).status.ok());
  ASSERT_TRUE(test::call(pipeline, SetRefinementCommand{slice.slice_id, true, 10, 0, settings})
                  .status.ok());
  test::begin_scan(pipeline, scan);
  const std::uint64_t total = 90 + 30;
  test::feed_phantom(pipeline, scan, 0, static_cast<std::uint32_t>(total));
  test::end_scan(pipeline, scan, total);
  pipeline.wait_idle();
  ASSERT_TRUE(sink.wait_for(
      [&] {
        for (const RefinedSliceImage& r : sink.refined()) {
          if (r.slice.projections_integrated == total) return true;
        }
        return false;
      },
      std::chrono::seconds(60)));
  const RefinedSliceImage refined = sink.refined().back();
  EXPECT_EQ(refined.solver.rfind("cuda tensor-core fp16", 0), 0u) << refined.solver;
  EXPECT_LT(refined.residual_before, 0.3);
  const RefinementSummary& summary = refined.summary;
  if (plain_cgls) {
    EXPECT_LT(refined.residual_after, 0.7 * refined.residual_before);
    EXPECT_EQ(summary.method, "cgls");
    EXPECT_EQ(summary.stop_reason, "max_iterations");
  } else {
    EXPECT_EQ(summary.method, "fista");
    EXPECT_EQ(summary.regularizer, "tv");
    EXPECT_TRUE(summary.non_negative);
    EXPECT_TRUE(
        summary.stop_reason == "max_iterations" ||
        (summary.stop_reason == "discrepancy" && refined.residual_after <= summary.target_residual))
        << summary.stop_reason;
    EXPECT_GE(*std::min_element(refined.slice.values.begin(), refined.slice.values.end()), 0.0f);
  }
  const std::vector<float> truth =
      phantom::sample(scan.phantom, slice_grid(slice.orientation, slice.width, slice.height), 3);
  const double fbp_error = test::relative_error(sink.last_slice(slice.slice_id)->values, truth);
  const double refined_error = test::relative_error(refined.slice.values, truth);
  std::printf("%s: residual %.4f -> %.4f, error to the phantom %.4f (FBP) -> %.4f\n",
              plain_cgls ? "plain CGLS" : "default", refined.residual_before,
              refined.residual_after, fbp_error, refined_error);
  EXPECT_LE(refined_error, fbp_error);
  EXPECT_EQ(pipeline.metrics().errors, 0u);
}

void expect_refined_through_pipeline(const test::TestScan& scan, const SetSliceCommand& slice) {
  for (const RefinementSettings& settings : {plain_cgls_settings(), RefinementSettings{}})
    expect_refined_through_pipeline(scan, slice, settings);
}

TEST(SliceRefinerGpu, RefinesThroughThePipeline) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  const test::TestScan scan =
      test::make_parallel_scan(2, {16, 64}, 90, PixelType::kUint16, 2, 2, kPixelMm);
  expect_refined_through_pipeline(scan, test::axial_slice(scan.description, 3, 64));
}

// The central slice of a cone-beam scan (FDK image, cosine-weighted rows on the GPU).
TEST(SliceRefinerGpu, RefinesAConeBeamCentralSliceThroughThePipeline) {
  SLICESTREAM_REQUIRE_CUDA_BACKEND();
  const test::TestScan scan = test::make_cone_scan(5, {16, 64}, 90, 150, 100);
  expect_refined_through_pipeline(scan, test::axial_slice(scan.description, 3, 48));
}

}  // namespace
}  // namespace slicestream
