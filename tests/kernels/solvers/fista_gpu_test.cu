// GPU FISTA (label gpu) against its CPU twin: the smoothed-TV gradient pass on the device equals
// the host's; fista_gpu over the Tensor Core projector (compensated fp16 operands, as the slice
// refiner runs it) follows fista_cpu over the CPU twin of the same matrix (residual history,
// stop reasons, image), with TV and non-negativity, on two columns of different scale, with the
// discrepancy stop; the workspace is kept across solves.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/cuda/expr_device_evaluate.cuh"
#include "kernels/expr/host_evaluate.hpp"
#include "kernels/solvers/cuda/fista_gpu.hpp"
#include "kernels/solvers/fista.hpp"
#include "kernels/solvers/total_variation.hpp"
#include "tests/kernels/tensorcore/tensorcore_gpu_test_support.hpp"
#include "tests/support/ellipse_phantom_2d.hpp"

namespace slicestream::tensorcore {
namespace {

using solvers::FistaOptions;
using solvers::FistaReport;
using solvers::Regularizer;
using testing::DeviceBuffer;

TEST(FistaGpu, TotalVariationGradientMatchesTheHost) {
  SLICESTREAM_REQUIRE_GPU();
  const int width = 37, height = 23, columns = 3;
  const std::vector<float> x =
      testing::random_vector(static_cast<std::size_t>(width * height * columns), 5, 0.0f, 1.0f);
  const std::vector<float> weight = {1.0f, 0.5f, 0.0f}, epsilon = {0.01f, 0.1f, 0.1f};
  const expr::Extent2D extent{width * height, columns};
  std::vector<float> host(x.size());
  const solvers::TotalVariationGradient host_tv{x.data(), weight.data(), epsilon.data(),
                                                width,    height,        columns};
  expr::evaluate_pass(expr::fused(expr::store(host.data(), total_variation_gradient(host_tv))),
                      extent, nullptr);
  DeviceBuffer<float> d_x(x), d_weight(weight), d_epsilon(epsilon),
      d_out(testing::nan_vector(x.size()));
  const solvers::TotalVariationGradient device_tv{d_x.data(), d_weight.data(), d_epsilon.data(),
                                                  width,      height,          columns};
  ::slicestream::cuda::evaluate_pass(
      expr::fused(expr::store(d_out.data(), total_variation_gradient(device_tv))), extent, nullptr,
      nullptr);
  const std::vector<float> device = d_out.download();
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(device[i], host[i], 1e-4f * (1 + std::abs(host[i]))) << i;
}

TEST(FistaGpu, FollowsTheCpuTwinOnTheTensorCoreProjector) {
  SLICESTREAM_REQUIRE_GPU();
  const ImageGrid2d grid{64, 64, 1.0};
  const Geometry2d geometry = testing::small_parallel(30, 96, 64.0);
  const auto phantom = shepp_logan_2d(30.0, 0.1);
  const std::vector<float> truth = sample_phantom(testing::pool(), phantom, grid, 4);
  const std::vector<float> data = project_phantom(testing::pool(), phantom, geometry, 8);
  const auto a = std::make_shared<CsrMatrix>(build_dd_matrix(testing::pool(), geometry, grid));
  TensorCoreMatrixOptions tc;
  tc.shape = WmmaShape::kM32N8K16;
  auto m = std::make_shared<TensorCoreMatrix>(
      build_tensorcore_matrix(testing::pool(), *a, geometry, grid, tc, nullptr));
  cuda::TensorCoreProjectorOptions gpu_options;
  gpu_options.compensated_operands = true;
  cuda::TensorCoreProjector gpu(m, gpu_options);
  BsrProjectorCpu cpu(m, testing::pool(), {true, {}});

  // Two columns: the data and twice the data; the start a damped, shifted copy of the truth.
  const std::size_t rays = data.size(), pixels = truth.size();
  std::vector<float> b(2 * rays), x0(2 * pixels);
  for (std::size_t r = 0; r < rays; ++r) {
    b[2 * r] = data[r];
    b[2 * r + 1] = 2 * data[r];
  }
  for (std::size_t p = 0; p < pixels; ++p) {
    x0[2 * p] = 0.7f * truth[p] - 0.01f;
    x0[2 * p + 1] = 2 * x0[2 * p];
  }
  FistaOptions options;
  options.max_iterations = 40;
  options.regularizer = Regularizer::kTotalVariation;
  options.weight = 2e-3;
  options.image_width = grid.width;
  options.image_height = grid.height;
  options.relative_tolerance = 0.02;

  std::vector<float> x_cpu = x0;
  solvers::FistaWorkspace cpu_workspace;
  const FistaReport cpu_report =
      solvers::fista_cpu(cpu, b.data(), x_cpu.data(), 2, options, cpu_workspace);
  DeviceBuffer<float> d_b(b), d_x(x0);
  solvers::cuda::FistaWorkspaceGpu workspace;
  const FistaReport gpu_report =
      solvers::cuda::fista_gpu(gpu, d_b.data(), d_x.data(), 2, options, nullptr, workspace);
  const std::vector<float> x_gpu = d_x.download();

  EXPECT_NEAR(gpu_report.lipschitz, cpu_report.lipschitz, 1e-3 * cpu_report.lipschitz);
  EXPECT_EQ(gpu_report.stop, cpu_report.stop);
  EXPECT_NEAR(gpu_report.iterations, cpu_report.iterations, 1);
  const std::size_t k =
      std::min(gpu_report.relative_residual.size(), cpu_report.relative_residual.size());
  for (std::size_t i = 0; i < k; ++i) {
    for (int c = 0; c < 2; ++c) {
      EXPECT_NEAR(gpu_report.relative_residual[i][c], cpu_report.relative_residual[i][c],
                  0.01 * cpu_report.relative_residual[i][c]);
    }
  }
  EXPECT_LT(testing::relative_error(x_gpu, x_cpu), 1e-2);
  EXPECT_GE(*std::min_element(x_gpu.begin(), x_gpu.end()), 0.0f);

  // Kept across solves: a second solve allocates nothing and gives the same result.
  const std::size_t bytes = workspace.bytes();
  DeviceBuffer<float> d_x2(x0);
  solvers::cuda::fista_gpu(gpu, d_b.data(), d_x2.data(), 2, options, nullptr, workspace);
  EXPECT_EQ(workspace.bytes(), bytes);
  EXPECT_LT(testing::relative_error(d_x2.download(), x_gpu), 1e-5);
}

}  // namespace
}  // namespace slicestream::tensorcore
