// GPU tests of the gathered symmetric products (label gpu): the projector's gathered path
// against the CPU twin of the symmetric projector, plain and compensated operands, the column
// form and the adjoint; and the gathered kernel itself against its CPU twin over many groups per
// CTA.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/half_float.hpp"
#include "kernels/tensorcore/cuda/gathered_spmm.hpp"
#include "kernels/tensorcore/symmetric_gather.hpp"
#include "tests/kernels/tensorcore/tensorcore_gpu_test_support.hpp"
#include "tests/support/gathered_product_cpu.hpp"

namespace slicestream::tensorcore::testing {
namespace {

// The gathered symmetric products (one column per slice, operands read through the symmetry)
// against the CPU twin of the symmetric projector, plain and compensated operands (both
// directions, or the forward operand only).
TEST(TensorCoreGpu, GatheredSymmetricProductsMatchTheTwin) {
  SLICESTREAM_REQUIRE_GPU();
  const SmallProblem p;
  const auto sym = p.gathered_matrix();
  cuda::TensorCoreProjector gathered(sym);           // the default options: gathered products on
  EXPECT_FALSE(gathered.uses_gathered_products(1));  // the column form: 8 columns
  EXPECT_TRUE(gathered.uses_gathered_products(32));
  struct Operands {
    const char* name;
    bool compensated;
    bool compensate_backward;
  };
  for (const Operands& o : {Operands{"fp16", false, false}, Operands{"compensated", true, true},
                            Operands{"compensated forward only", true, false}}) {
    cuda::TensorCoreProjectorOptions options;
    options.compensated_operands = o.compensated;
    options.compensate_backward = o.compensate_backward;
    cuda::TensorCoreProjector gpu(sym, options);
    BsrProjectorCpuOptions twin;
    twin.compensated = o.compensated;
    twin.compensate_backward = o.compensate_backward;
    BsrProjectorCpu cpu(sym, testing::pool(), twin);
    const std::vector<int> counts =
        o.compensate_backward ? std::vector<int>{8, 13, 32} : std::vector<int>{16, 20, 32};
    for (int slices : o.compensated ? counts : std::vector<int>{16, 20, 64}) {
      SCOPED_TRACE(std::string(o.name) + " slices " + std::to_string(slices));
      ASSERT_TRUE(gpu.uses_gathered_products(slices));
      ASSERT_TRUE(gpu.uses_gathered_products(slices, /*backward=*/true));
      const auto seed = static_cast<std::uint32_t>(1000 + slices);
      EXPECT_LT(compare_forward(gpu, cpu, slices, seed), 1e-5);
      EXPECT_LT(compare_backward(gpu, cpu, slices, seed + 1), 1e-5);
    }
  }
  // Off: the column form, same results.
  cuda::TensorCoreProjectorOptions column_form;
  column_form.gathered_symmetry = false;
  cuda::TensorCoreProjector columns(sym, column_form);
  EXPECT_FALSE(columns.uses_gathered_products(32));
  BsrProjectorCpu cpu(sym, testing::pool());
  EXPECT_LT(compare_forward(columns, cpu, 32, 77), 1e-5);
  // Adjoint (dot-product) test of the gathered pair.
  const int slices = 32;
  const std::vector<float> x =
      testing::random_vector(static_cast<std::size_t>(p.grid.pixels() * slices), 17, 0, 1);
  const std::vector<float> y =
      testing::random_vector(static_cast<std::size_t>(p.geometry.rays() * slices), 18, 0, 1);
  DeviceBuffer<float> dx(x), dy(y), dax(nan_vector(y.size())), daty(nan_vector(x.size()));
  gathered.forward(dx.data(), dax.data(), slices, nullptr);
  gathered.backward(dy.data(), daty.data(), slices, nullptr);
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_NEAR(testing::dot(dax.download(), y) / testing::dot(x, daty.download()), 1.0, 2e-3);
}

// The gathered kernel itself against its CPU twin (gathered_product_cpu) over the grouped
// blocks, both directions, with few persistent CTAs so that every CTA runs through many groups
// (and group boundaries inside its copy pipeline), and with one CTA per SM.
TEST(TensorCoreGpu, GatheredKernelMatchesItsTwinOverManyGroupsPerCta) {
  SLICESTREAM_REQUIRE_GPU();
  const SmallProblem p;
  const auto matrix = p.gathered_matrix();
  const TensorCoreMatrix& m = *matrix;
  const SymmetricGatherTables tables = make_symmetric_gather_tables(m);
  ASSERT_GE(m.gathered_forward.group_count(), 8);  // one CTA runs through all groups
  ASSERT_GE(m.gathered_backward.group_count(), 4);
  DeviceBuffer<int> ray_of_row(tables.ray_of_row), pixel_of_col(tables.pixel_of_col);
  for (bool forward : {true, false}) {
    const GroupedBlocks& blocks = forward ? m.gathered_forward : m.gathered_backward;
    const std::vector<std::int32_t>& source = forward ? tables.pixel_of_col : tables.ray_of_row;
    const std::vector<std::int32_t>& target = forward ? tables.ray_of_row : tables.pixel_of_col;
    const long long in_rows = forward ? p.grid.pixels() : p.geometry.rays();
    const long long out_rows = forward ? p.geometry.rays() : p.grid.pixels();
    DeviceBuffer<std::uint16_t> d_blocks(blocks.blocks);
    DeviceBuffer<int> group_chunk(blocks.group_chunk), chunk_tile(blocks.chunk_tile),
        chunk_block(blocks.chunk_block);
    DeviceBuffer<std::uint64_t> chunk_mask(blocks.chunk_mask);
    for (int columns : {32, 64}) {
      // fp16 operand values (exact in the twin's float input), per-column scales.
      const std::vector<float> random = testing::random_vector(
          static_cast<std::size_t>(in_rows * columns), forward ? 5u : 6u, -1, 1);
      std::vector<std::uint16_t> in_half(random.size());
      std::vector<float> in(random.size());
      for (std::size_t i = 0; i < random.size(); ++i) {
        in_half[i] = float_to_half(random[i]);
        in[i] = half_to_float(in_half[i]);
      }
      std::vector<float> want(static_cast<std::size_t>(out_rows * columns), 0.0f);
      gathered_product_cpu(testing::pool(), blocks, source.data(), target.data(), in.data(),
                           want.data(), columns);
      DeviceBuffer<std::uint16_t> d_in(in_half);
      DeviceBuffer<float> scale(
          std::vector<float>(static_cast<std::size_t>(columns), blocks.value_scale));
      for (int ctas : {1, 3, 0}) {
        SCOPED_TRACE(std::string(forward ? "forward" : "backward") + ", " +
                     std::to_string(columns) + " columns, " + std::to_string(ctas) + " CTAs");
        DeviceBuffer<float> out(std::vector<float>(want.size(), 0.0f));
        cuda::GatheredSpmmArgs a;
        a.blocks = d_blocks.data();
        a.group_chunk = group_chunk.data();
        a.chunk_tile = chunk_tile.data();
        a.chunk_mask = chunk_mask.data();
        a.chunk_block = chunk_block.data();
        a.group_count = static_cast<int>(blocks.group_count());
        a.source = forward ? pixel_of_col.data() : ray_of_row.data();
        a.source_stride = blocks.cols;
        a.target = forward ? ray_of_row.data() : pixel_of_col.data();
        a.target_stride = blocks.rows;
        a.in = d_in.data();
        a.columns = columns;
        a.slices = columns;
        a.column_scale = scale.data();
        a.out = out.data();
        a.ctas = ctas;
        cuda::launch_gathered_spmm(a, nullptr);
        SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
        EXPECT_LT(testing::relative_error(out.download(), want), 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace slicestream::tensorcore::testing
