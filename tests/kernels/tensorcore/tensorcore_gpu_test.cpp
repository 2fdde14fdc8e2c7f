// GPU tests of the Tensor Core projector (label gpu): the WMMA kernels against their CPU twins
// for every fragment shape, ordering and column count, with fp16 and compensated operands; the
// symmetric projector against the plain one; the adjoint test and the cuSPARSE baseline; column
// limits; the repeated product the benchmark times; the tensor core accumulation model of the
// twin against the kernels with and without split accumulation chains. The gathered symmetric
// products are in gathered_gpu_test.cpp, GPU CGLS in tests/kernels/solvers.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/tensorcore/csr_projector.hpp"
#include "tests/kernels/tensorcore/tensorcore_gpu_test_support.hpp"
#include "tests/support/cuda/cusparse_projector.hpp"

namespace slicestream::tensorcore::testing {
namespace {

TEST(TensorCoreGpu, WmmaProductsMatchTheCpuTwin) {
  SLICESTREAM_REQUIRE_GPU();
  const SmallProblem p;
  for (BlockOrdering ordering :
       {BlockOrdering::kPseudoMorton, BlockOrdering::kRaySheared, BlockOrdering::kNatural}) {
    for (WmmaShape shape : kAllWmmaShapes) {
      const auto m = p.matrix(shape, ordering);
      cuda::TensorCoreProjector gpu(m);
      BsrProjectorCpu cpu(m, testing::pool());
      for (int slices : {1, 8, 16, 32, 64}) {
        SCOPED_TRACE(std::string(to_string(shape)) + " " + to_string(ordering) + " slices " +
                     std::to_string(slices));
        EXPECT_LT(compare_forward(gpu, cpu, slices, 100 + static_cast<std::uint32_t>(slices)),
                  1e-5);
        EXPECT_LT(compare_backward(gpu, cpu, slices, 200 + static_cast<std::uint32_t>(slices)),
                  1e-5);
      }
    }
  }
}

TEST(TensorCoreGpu, CompensatedOperandsMatchTheCpuTwin) {
  SLICESTREAM_REQUIRE_GPU();
  const SmallProblem p;
  for (bool symmetric : {false, true}) {
    for (WmmaShape shape : kAllWmmaShapes) {
      TensorCoreMatrixOptions options;
      options.shape = shape;
      options.symmetric = symmetric;
      auto m = std::make_shared<TensorCoreMatrix>(
          build_tensorcore_matrix(testing::pool(), p.geometry, p.grid, options));
      cuda::TensorCoreProjectorOptions compensated;
      compensated.compensated_operands = true;
      cuda::TensorCoreProjector gpu(m, compensated);
      BsrProjectorCpu cpu(m, testing::pool(), {true, {}});
      for (int slices : {1, 4, 16}) {
        SCOPED_TRACE(std::string(to_string(shape)) + (symmetric ? " symmetric" : "") + " slices " +
                     std::to_string(slices));
        EXPECT_LT(compare_forward(gpu, cpu, slices, 500 + static_cast<std::uint32_t>(slices)),
                  1e-5);
        EXPECT_LT(compare_backward(gpu, cpu, slices, 600 + static_cast<std::uint32_t>(slices)),
                  1e-5);
      }
    }
  }
}

TEST(TensorCoreGpu, SymmetricProjectorMatchesTwinAndPlain) {
  SLICESTREAM_REQUIRE_GPU();
  const SmallProblem p;
  for (WmmaShape shape : kAllWmmaShapes) {
    TensorCoreMatrixOptions options;
    options.shape = shape;
    options.symmetric = true;
    auto sym = std::make_shared<TensorCoreMatrix>(
        build_tensorcore_matrix(testing::pool(), p.geometry, p.grid, options));
    options.symmetric = false;
    auto plain = std::make_shared<TensorCoreMatrix>(
        build_tensorcore_matrix(testing::pool(), p.geometry, p.grid, options));
    cuda::TensorCoreProjector gpu(sym);
    cuda::TensorCoreProjector gpu_plain(plain);
    BsrProjectorCpu cpu(sym, testing::pool());
    // A_oct is 1/8 of A; the device also holds A_oct^T's blocks and the gather tables where the
    // gathered products apply (16.16.16).
    EXPECT_LT(sym->bsr.bytes() * 5, plain->bsr.bytes());
    EXPECT_LT(gpu.matrix_device_bytes() * 2, gpu_plain.matrix_device_bytes());
    for (int slices : {1, 2, 4, 32}) {
      SCOPED_TRACE(std::string(to_string(shape)) + " slices " + std::to_string(slices));
      EXPECT_LT(compare_forward(gpu, cpu, slices, 300 + static_cast<std::uint32_t>(slices)), 1e-5);
      EXPECT_LT(compare_backward(gpu, cpu, slices, 400 + static_cast<std::uint32_t>(slices)), 1e-5);
      // 8-symmetry FP == plain FP (up to fp16 operand rounding of differently gathered columns).
      EXPECT_LT(compare_forward(gpu, gpu_plain, slices, 5, 0, 1), 2e-3);
    }
  }
}

TEST(TensorCoreGpu, BackprojectionIsTheAdjointAndMatchesCsr) {
  SLICESTREAM_REQUIRE_GPU();
  const SmallProblem p;
  cuda::CusparseProjector csr(*p.a);
  CsrProjector csr_cpu(p.a, testing::pool());
  for (WmmaShape shape : kAllWmmaShapes) {
    TensorCoreMatrixOptions options;
    options.shape = shape;
    cuda::TensorCoreProjector gpu(std::make_shared<TensorCoreMatrix>(
        build_tensorcore_matrix(testing::pool(), *p.a, p.geometry, p.grid, options, nullptr)));
    const int slices = 32;
    const std::vector<float> x =
        testing::random_vector(static_cast<std::size_t>(p.grid.pixels() * slices), 7, 0, 1);
    const std::vector<float> y =
        testing::random_vector(static_cast<std::size_t>(p.geometry.rays() * slices), 8, 0, 1);
    DeviceBuffer<float> dx(x), dy(y), dax(y.size()), daty(x.size()), dcsr_ax(y.size()),
        dcsr_aty(x.size());
    gpu.forward(dx.data(), dax.data(), slices, nullptr);
    gpu.backward(dy.data(), daty.data(), slices, nullptr);
    csr.forward(dx.data(), dcsr_ax.data(), slices, nullptr);
    csr.backward(dy.data(), dcsr_aty.data(), slices, nullptr);
    SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> ax = dax.download(), aty = daty.download();
    EXPECT_NEAR(testing::dot(ax, y) / testing::dot(x, aty), 1.0, 2e-3) << to_string(shape);
    EXPECT_LT(testing::relative_error(ax, dcsr_ax.download()), 2e-3) << to_string(shape);
    EXPECT_LT(testing::relative_error(aty, dcsr_aty.download()), 2e-3) << to_string(shape);
  }
  // The cuSPARSE baseline itself against the CPU CSR products, SpMV and SpMM.
  for (int columns : {1, 32}) {
    const std::vector<float> x =
        testing::random_vector(static_cast<std::size_t>(p.grid.pixels() * columns), 9);
    const std::vector<float> y =
        testing::random_vector(static_cast<std::size_t>(p.geometry.rays() * columns), 10);
    DeviceBuffer<float> dx(x), dy(y), dax(nan_vector(y.size())), daty(nan_vector(x.size()));
    csr.forward(dx.data(), dax.data(), columns, nullptr);
    csr.backward(dy.data(), daty.data(), columns, nullptr);
    SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ax(y.size()), aty(x.size());
    csr_cpu.forward(x.data(), ax.data(), columns);
    csr_cpu.backward(y.data(), aty.data(), columns);
    EXPECT_LT(testing::relative_error(dax.download(), ax), 1e-5) << columns;
    EXPECT_LT(testing::relative_error(daty.download(), aty), 1e-5) << columns;
  }
  std::cout << "cuSPARSE configuration: " << csr.configuration() << "\n";
}

TEST(TensorCoreGpu, RefusesTooManyColumns) {
  SLICESTREAM_REQUIRE_GPU();
  const SmallProblem p;
  TensorCoreMatrixOptions options;
  options.shape = WmmaShape::kM16N16K16;
  options.symmetric = true;
  cuda::TensorCoreProjector gpu(std::make_shared<TensorCoreMatrix>(
      build_tensorcore_matrix(testing::pool(), p.geometry, p.grid, options)));
  EXPECT_EQ(gpu.forward_columns(32), 256);
  EXPECT_THROW(gpu.forward_columns(33), std::invalid_argument);
  EXPECT_THROW(gpu.transposed_columns(40), std::invalid_argument);
  EXPECT_THROW(gpu.forward_columns(0), std::invalid_argument);
}

// The product alone, repeated (what the benchmark times): refused before any call; after a
// column-form call its result stays in the work space, so the output is unchanged; after a
// gathered call it is added to that call's output once more, which doubles it.
TEST(TensorCoreGpu, RepeatedProductsRerunTheLastProduct) {
  SLICESTREAM_REQUIRE_GPU();
  const SmallProblem p;
  cuda::TensorCoreProjector gpu(p.gathered_matrix());
  EXPECT_THROW(gpu.repeat_last_product(nullptr), std::logic_error);
  for (int slices : {1, 32}) {
    const bool gathered = gpu.uses_gathered_products(slices);
    ASSERT_EQ(gathered, slices == 32);
    SCOPED_TRACE(gathered ? "gathered" : "column form");
    const float factor = gathered ? 2.0f : 1.0f;
    DeviceBuffer<float> x(
        testing::random_vector(static_cast<std::size_t>(p.grid.pixels() * slices), 91, 0, 1));
    DeviceBuffer<float> y(
        testing::random_vector(static_cast<std::size_t>(p.geometry.rays() * slices), 92, 0, 1));
    DeviceBuffer<float> ax(y.size()), aty(x.size());
    // `project` writes `out`; repeating its product leaves `out` times `factor`.
    auto expect_repeat = [&](const std::function<void()>& project, DeviceBuffer<float>& out) {
      project();
      std::vector<float> expected = out.download();
      for (float& v : expected)
        v *= factor;
      gpu.repeat_last_product(nullptr);
      EXPECT_LT(testing::relative_error(out.download(), expected), 1e-6);
    };
    expect_repeat([&] { gpu.forward(x.data(), ax.data(), slices, nullptr); }, ax);
    expect_repeat([&] { gpu.backward(y.data(), aty.data(), slices, nullptr); }, aty);
  }
}

// The twin's model of tensor core accumulation (mma_accumulation_model.hpp) against the kernels:
// with one accumulation chain per output (split off) the model must explain the GPU better than
// exact sums do; with split chains (the default) the GPU matches the model and exact sums alike.
TEST(TensorCoreGpu, AccumulationModelExplainsTheKernels) {
  SLICESTREAM_REQUIRE_GPU();
  const SmallProblem p;
  for (WmmaShape shape : kAllWmmaShapes) {
    const auto m = p.matrix(shape);
    for (bool split : {false, true}) {
      cuda::TensorCoreProjectorOptions options;
      options.split_accumulation = split;
      cuda::TensorCoreProjector gpu(m, options);
      BsrProjectorCpu exact(m, testing::pool());
      BsrProjectorCpuOptions model_options;
      model_options.accumulation.emulate = true;
      model_options.accumulation.chain_blocks = split ? kMmaChainBlocks : 0;
      BsrProjectorCpu model(m, testing::pool(), model_options);
      const int slices = 8;
      const double fwd_exact = compare_forward(gpu, exact, slices, 700);
      const double fwd_model = compare_forward(gpu, model, slices, 700);
      const double bwd_exact = compare_backward(gpu, exact, slices, 800);
      const double bwd_model = compare_backward(gpu, model, slices, 800);
      std::cout << to_string(shape) << (split ? " split" : " one chain") << ": GPU vs exact twin "
                << fwd_exact << " / " << bwd_exact
                << " (forward / backward), vs accumulation model " << fwd_model << " / "
                << bwd_model << "\n";
      SCOPED_TRACE(std::string(to_string(shape)) + (split ? " split" : " one chain"));
      if (!split) {
        // Which variant of the model fits the hardware best (printed for calibration).
        for (const auto& [step_products, extra_bits] :
             std::vector<std::pair<int, int>>{{16, 0}, {8, 0}, {16, 3}}) {
          BsrProjectorCpuOptions variant = model_options;
          variant.accumulation.step_products = step_products;
          variant.accumulation.extra_bits = extra_bits;
          BsrProjectorCpu twin(m, testing::pool(), variant);
          std::cout << "  model k-step " << step_products << " +" << extra_bits
                    << " bits: GPU vs model " << compare_forward(gpu, twin, slices, 700) << " / "
                    << compare_backward(gpu, twin, slices, 800) << "\n";
        }
      }
      if (split) {
        EXPECT_LT(fwd_exact, 1e-5);
        EXPECT_LT(bwd_exact, 1e-5);
        EXPECT_LT(fwd_model, 1e-5);
        EXPECT_LT(bwd_model, 1e-5);
      } else {
        EXPECT_LT(fwd_model, fwd_exact);
        EXPECT_LT(bwd_model, bwd_exact);
      }
    }
  }
}

}  // namespace
}  // namespace slicestream::tensorcore::testing
