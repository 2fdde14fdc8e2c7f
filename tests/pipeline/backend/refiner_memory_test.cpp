// Slice refiners inside the backends' memory budgets, without a GPU: the CUDA backend's admission
// arithmetic (device_memory_budget.hpp) and refiner estimate, memory charges, and the CPU backend,
// whose refiners charge matrix and CGLS workspace to the budget that the scan, targets and other
// refiners share; a refinement that does not fit is refused with "out_of_memory".
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/solvers/cgls_workspace.hpp"
#include "kernels/solvers/fista.hpp"
#include "pipeline/backend/device_memory_budget.hpp"
#include "pipeline/backend/memory_charge.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr double kPixelMm = 0.5;

RefinementSetup setup_of(const test::TestScan& scan, const SetSliceCommand& slice) {
  RefinementPlan plan;
  EXPECT_FALSE(plan_refinement(slice, scan.description.geometry, &plan));
  return refinement_setup(plan, scan.description.geometry);
}

TEST(DeviceMemoryBudget, AdmitsWhatLeavesTheReserveFree) {
  EXPECT_EQ(usable_device_bytes(1000 * kMiB, 256 * kMiB), 744 * kMiB);
  EXPECT_EQ(usable_device_bytes(100 * kMiB, 256 * kMiB), 0u) << "the reserve is not even free";
  EXPECT_EQ(device_memory_shortfall(744 * kMiB, 1000 * kMiB, 256 * kMiB), "") << "exactly fits";
  const std::string over = device_memory_shortfall(745 * kMiB, 1000 * kMiB, 256 * kMiB);
  EXPECT_EQ(over, "745 MiB, 1000 MiB are free and 256 MiB stay reserved");
  EXPECT_FALSE(device_memory_shortfall(1, 100 * kMiB, 256 * kMiB).empty());
}

TEST(RefinerMemory, EstimatesCountMatrixWorkspaceAndVectors) {
  // The size: 512^2 pixels, 720 projections of 512 bins.
  RefinementSetup setup;
  setup.geometry = tensorcore::make_parallel_2d(tensorcore::uniform_angles(720, M_PI), 512, 1.0);
  setup.grid = {512, 512, 1.0};
  const long long rays = setup.geometry.rays();
  const long long pixels = setup.grid.pixels();
  const std::size_t matrix = estimated_matrix_bytes(setup);
  // 4.3e8 non-zeros (1 + 4/pi bins per pixel and angle), 8 bytes each: about 3.2 GiB.
  EXPECT_GT(matrix, std::size_t{3100} * kMiB);
  EXPECT_LT(matrix, std::size_t{3300} * kMiB);
  const std::size_t cuda = estimated_cuda_refiner_bytes(setup);
  EXPECT_EQ(cuda, matrix + static_cast<std::size_t>(rays) * kCudaOperandBytesPerRay +
                      static_cast<std::size_t>(pixels) * kCudaOperandBytesPerPixel +
                      solvers::cgls_gpu_workspace_bytes({rays, pixels, 1, kCudaRefinerIterations}) +
                      solvers::fista_workspace_bytes({rays, pixels, 1, 0}) +
                      static_cast<std::size_t>(2 * rays + pixels) * sizeof(float));
  const std::size_t cpu = estimated_cpu_refiner_bytes(setup);
  EXPECT_GT(cpu, matrix + solvers::cgls_workspace_bytes({rays, pixels, 1, 0}));
  // Beside the matrix the workspaces are small: a few percent.
  EXPECT_LT(cuda, matrix + matrix / 20);
  EXPECT_LT(cpu, matrix + matrix / 20);
}

TEST(MemoryCharge, FollowsItsHolder) {
  MemoryAccount account = std::make_shared<std::atomic<std::size_t>>(100);
  {
    MemoryCharge a(account, 40);
    MemoryCharge b(account, 2);
    EXPECT_EQ(account->load(), 142u);
    a.set(10);
    EXPECT_EQ(a.bytes(), 10u);
    EXPECT_EQ(account->load(), 112u);
  }
  EXPECT_EQ(account->load(), 100u);
  MemoryCharge detached(nullptr, 5);  // no account: nothing to charge
  EXPECT_EQ(detached.bytes(), 5u);
}

TEST(RefinerMemory, CpuRefinersChargeTheBackendsBudget) {
  const test::TestScan scan =
      test::make_parallel_scan(1, {16, 64}, 90, PixelType::kUint16, 2, 2, kPixelMm);
  const RefinementSetup setup = setup_of(scan, test::axial_slice(scan.description, 1, 64));
  const std::size_t estimate = estimated_cpu_refiner_bytes(setup);

  CpuBackend roomy(CpuBackendOptions{2, 64 * kMiB});
  EXPECT_EQ(roomy.refiner_memory_problem(setup), "");
  std::unique_ptr<SliceRefiner> refiner = roomy.create_refiner(setup);
  const std::size_t held = refiner->memory_bytes();
  EXPECT_GT(held, refiner->matrix_bytes()) << "the CGLS workspace counts too";
  EXPECT_EQ(roomy.info().memory_used_by_refiners_bytes, held);
  EXPECT_GT(static_cast<double>(estimate), 0.9 * static_cast<double>(held));
  EXPECT_LT(static_cast<double>(estimate), 2.0 * static_cast<double>(held));
  // Refinements reuse the workspace: what the refiner holds does not change.
  std::vector<float> x(static_cast<std::size_t>(setup.grid.pixels()), 0.0f);
  std::vector<float> b(static_cast<std::size_t>(setup.geometry.rays()), 1.0f);
  for (int k = 0; k < 2; ++k)
    for (const RefinementSettings& settings : {RefinementSettings{}, plain_cgls_settings()})
      refiner->refine(x.data(), b.data(), RefinementRequest{5, settings}, x.data());
  EXPECT_EQ(refiner->memory_bytes(), held);
  EXPECT_EQ(roomy.info().memory_used_by_refiners_bytes, held);
  refiner.reset();
  EXPECT_EQ(roomy.info().memory_used_by_refiners_bytes, 0u);

  // A limit with room for one refiner: the second is refused before it is built, and the
  // targets meet the refiner's share too.
  CpuBackend tight(CpuBackendOptions{2, estimate + estimate / 2});
  std::unique_ptr<SliceRefiner> first = tight.create_refiner(setup);
  const std::string problem = tight.refiner_memory_problem(setup);
  EXPECT_NE(problem.find("memory limit"), std::string::npos) << problem;
  // A second refiner over the limit is not built.
  test::expect_backend_error([&] { tight.create_refiner(setup); }, "more than the");
  const int side = static_cast<int>(std::sqrt(static_cast<double>(estimate) / sizeof(float)));
  const SliceOrientation axial = test::axial_slice(scan.description, 9, side).orientation;
  EXPECT_THROW(tight.create_target(slice_grid(axial, side, side)), BackendError);
  first.reset();
  EXPECT_EQ(tight.refiner_memory_problem(setup), "");
}

TEST(RefinerMemory, RefinementThatDoesNotFitIsRefusedWithItsReason) {
  const test::TestScan scan =
      test::make_parallel_scan(2, {16, 64}, 90, PixelType::kUint16, 2, 2, kPixelMm);
  const SetSliceCommand small = test::axial_slice(scan.description, 1, 16);
  const SetSliceCommand large = test::axial_slice(scan.description, 2, 64);
  const std::size_t large_bytes = estimated_cpu_refiner_bytes(setup_of(scan, large));
  PipelineConfig config = test::small_config();
  config.refinement.residual_interval_s = 0;  // only what is asked for
  // Room for the scan, the slices and the small slice's refiner, not the large one's.
  CpuBackendOptions options{2, large_bytes / 2};
  test::RecordingSink sink;
  Pipeline pipeline(config, std::make_unique<CpuBackend>(options), sink);
  pipeline.start();
  ASSERT_TRUE(test::call(pipeline, small).status.ok());
  ASSERT_TRUE(test::call(pipeline, large).status.ok());
  test::begin_scan(pipeline, scan);
  pipeline.wait_idle();
  const CommandReply refused = test::call(pipeline, SetRefinementCommand{2, true, 5, 0, {}});
  EXPECT_EQ(refused.status.code, StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status.reason, "out_of_memory") << refused.status.message;
  EXPECT_NE(refused.status.message.find("memory limit"), std::string::npos)
      << refused.status.message;
  const CommandReply accepted = test::call(pipeline, SetRefinementCommand{1, true, 5, 0, {}});
  EXPECT_TRUE(accepted.status.ok()) << accepted.status.message;
  EXPECT_EQ(pipeline.metrics().requests_refused.at("out_of_memory"), 1u);
}

}  // namespace
}  // namespace slicestream
