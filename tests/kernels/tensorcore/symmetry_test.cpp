// The 8-fold symmetry: which geometries have it (and clear refusals otherwise), and the symmetric
// forward and back projections equal to the plain ones.
#include <gtest/gtest.h>

#include <memory>

#include "kernels/tensorcore/square_symmetry.hpp"
#include "kernels/tensorcore/symmetric_gather.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"
#include "tests/kernels/tensorcore/tensorcore_test_support.hpp"
#include "tests/support/bsr_projector_cpu.hpp"
#include "tests/support/gathered_product_cpu.hpp"
#include "tests/support/operand_transforms_cpu.hpp"

namespace slicestream::tensorcore {
namespace {

using testing::kPi;

TEST(Symmetry, AcceptsInvariantGeometries) {
  const ImageGrid2d grid{32, 32, 1.0};
  EXPECT_EQ(check_symmetry(testing::small_parallel(64, 48, 32.0), grid), "");
  EXPECT_EQ(check_symmetry(testing::small_parallel(32, 48, 32.0, 0, 2 * kPi), grid), "");
  EXPECT_EQ(check_symmetry(testing::small_fan(48, 64, 32.0), grid), "");
  EXPECT_EQ(check_symmetry(testing::small_parallel(8, 47, 32.0), ImageGrid2d{31, 31, 1.0}), "");
}

TEST(Symmetry, RefusesClearly) {
  const ImageGrid2d grid{32, 32, 1.0};
  const std::string offset = check_symmetry(testing::small_parallel(64, 48, 32.0, 0.25), grid);
  EXPECT_NE(offset.find("detector offset"), std::string::npos) << offset;
  const std::string fan_offset = check_symmetry(testing::small_fan(48, 64, 32.0, 0.3), grid);
  EXPECT_NE(fan_offset.find("detector offset"), std::string::npos) << fan_offset;
  const std::string count = check_symmetry(testing::small_parallel(15, 48, 32.0), grid);
  EXPECT_NE(count.find("not invariant"), std::string::npos) << count;
  std::vector<double> shifted = uniform_angles(64, kPi);
  for (double& a : shifted)
    a += 0.01;
  const std::string start = check_symmetry(make_parallel_2d(shifted, 48, 32.0 / 48), grid);
  EXPECT_NE(start.find("not invariant"), std::string::npos) << start;
  const std::string square =
      check_symmetry(testing::small_parallel(64, 48, 32.0), ImageGrid2d{32, 30, 1.0});
  EXPECT_NE(square.find("square"), std::string::npos) << square;
  // A half-circle fan scan is not invariant under the reflections.
  const std::string half_fan =
      check_symmetry(make_fan_2d(uniform_angles(48, kPi), 64, 1.0, 96, 48), grid);
  EXPECT_NE(half_fan.find("not invariant"), std::string::npos) << half_fan;
  TensorCoreMatrixOptions options;
  options.symmetric = true;
  EXPECT_THROW(build_tensorcore_matrix(testing::pool(), testing::small_parallel(64, 48, 32.0, 0.25),
                                       grid, options),
               std::invalid_argument);
}

TEST(Symmetry, SymmetricProjectionEqualsPlainProjection) {
  for (int width : {32, 33}) {
    const ImageGrid2d grid{width, width, 0.75};
    for (const Geometry2d& g : {testing::small_parallel(64, 56, width * 0.75),
                                testing::small_fan(48, 72, width * 0.75)}) {
      SCOPED_TRACE(std::string(to_string(g.beam)) + " width " + std::to_string(width));
      const SymmetryPlan plan = make_symmetry_plan(g, grid);
      DdMatrixOptions options;
      options.column_factors = &plan.column_factor;
      const CsrMatrix a = build_dd_matrix(testing::pool(), g, grid);
      const CsrMatrix a_oct = build_dd_matrix(testing::pool(), g, grid, options);
      EXPECT_LT(a_oct.nnz() * 7, a.nnz());  // about an eighth
      const int slices = 2;
      const std::vector<float> x =
          testing::random_vector(static_cast<std::size_t>(grid.pixels() * slices), 31);
      std::vector<float> y(static_cast<std::size_t>(g.rays() * slices)), y_sym(y.size());
      csr_multiply(testing::pool(), a, x.data(), y.data(), slices);
      std::vector<float> x_oct(static_cast<std::size_t>(grid.pixels() * 8 * slices));
      std::vector<float> y_oct(static_cast<std::size_t>(g.rays() * 8 * slices));
      symmetric_gather(plan, x.data(), x_oct.data(), slices);
      csr_multiply(testing::pool(), a_oct, x_oct.data(), y_oct.data(), 8 * slices);
      symmetric_combine(plan, y_oct.data(), y_sym.data(), slices);
      EXPECT_LT(testing::relative_error(y_sym, y), 1e-5);

      const std::vector<float> r = testing::random_vector(y.size(), 32);
      std::vector<float> b(x.size()), b_sym(x.size());
      std::vector<float> s_oct(x_oct.size());
      csr_multiply_transposed(testing::pool(), a, r.data(), b.data(), slices);
      symmetric_spread(plan, r.data(), y_oct.data(), slices);
      csr_multiply_transposed(testing::pool(), a_oct, y_oct.data(), s_oct.data(), 8 * slices);
      symmetric_scatter(plan, s_oct.data(), b_sym.data(), slices);
      EXPECT_LT(testing::relative_error(b_sym, b), 1e-5);
    }
  }
}

TEST(Symmetry, SymmetricTensorCoreTwinMatchesPlain) {
  const ImageGrid2d grid{48, 48, 0.5};
  const Geometry2d g = testing::small_parallel(64, 64, 24.0);
  TensorCoreMatrixOptions plain_options;
  plain_options.shape = WmmaShape::kM32N8K16;
  TensorCoreMatrixOptions sym_options = plain_options;
  sym_options.symmetric = true;
  auto plain = std::make_shared<TensorCoreMatrix>(
      build_tensorcore_matrix(testing::pool(), g, grid, plain_options));
  auto sym = std::make_shared<TensorCoreMatrix>(
      build_tensorcore_matrix(testing::pool(), g, grid, sym_options));
  EXPECT_LT(sym->bsr.bytes() * 5, plain->bsr.bytes());
  BsrProjectorCpu plain_op(plain, testing::pool()), sym_op(sym, testing::pool());
  const std::vector<float> x =
      testing::random_vector(static_cast<std::size_t>(grid.pixels()), 41, 0, 1);
  std::vector<float> y(static_cast<std::size_t>(g.rays())), y_sym(y.size());
  plain_op.forward(x.data(), y.data(), 1);
  sym_op.forward(x.data(), y_sym.data(), 1);
  EXPECT_LT(testing::relative_error(y_sym, y), 2e-3);
  std::vector<float> b(x.size()), b_sym(x.size());
  plain_op.backward(y.data(), b.data(), 1);
  sym_op.backward(y.data(), b_sym.data(), 1);
  EXPECT_LT(testing::relative_error(b_sym, b), 2e-3);
}

}  // namespace
}  // namespace slicestream::tensorcore

namespace slicestream::tensorcore {
namespace {

// The gathered form (symmetric_gather.hpp): A_oct's and A_oct^T's blocks read through the two
// tables give the full A x and A^T y of the plain matrix (fp16 weights), and are adjoint.
TEST(Symmetry, GatheredProductsEqualThePlainMatrix) {
  for (int width : {32, 33}) {
    const ImageGrid2d grid{width, width, 0.75};
    for (const Geometry2d& g : {testing::small_parallel(64, 56, width * 0.75),
                                testing::small_fan(48, 72, width * 0.75)}) {
      SCOPED_TRACE(std::string(to_string(g.beam)) + " width " + std::to_string(width));
      TensorCoreMatrixOptions options;
      options.shape = WmmaShape::kM16N16K16;
      options.symmetric = true;
      const TensorCoreMatrix m = build_tensorcore_matrix(testing::pool(), g, grid, options);
      ASSERT_EQ(gathered_symmetry_problem(m), "");
      ASSERT_EQ(m.gathered_forward.block_count(), m.bsr.block_count());
      ASSERT_EQ(m.gathered_backward.rows, m.bsr.cols);
      ASSERT_EQ(m.gathered_backward.cols, m.bsr.rows);
      ASSERT_EQ(m.gathered_backward.block_count(), m.bsr.block_count());
      const SymmetricGatherTables t = make_symmetric_gather_tables(m);
      const CsrMatrix a = build_dd_matrix(testing::pool(), g, grid);
      const int slices = 3;
      const std::vector<float> x =
          testing::random_vector(static_cast<std::size_t>(grid.pixels() * slices), 11, -1, 1);
      const std::vector<float> y =
          testing::random_vector(static_cast<std::size_t>(g.rays() * slices), 12, -1, 1);
      std::vector<float> ax(y.size(), 0.0f), aty(x.size(), 0.0f);
      gathered_product_cpu(testing::pool(), m.gathered_forward, t.pixel_of_col.data(),
                           t.ray_of_row.data(), x.data(), ax.data(), slices);
      gathered_product_cpu(testing::pool(), m.gathered_backward, t.ray_of_row.data(),
                           t.pixel_of_col.data(), y.data(), aty.data(), slices);
      std::vector<float> ref_ax(y.size()), ref_aty(x.size());
      csr_multiply(testing::pool(), a, x.data(), ref_ax.data(), slices);
      csr_multiply_transposed(testing::pool(), a, y.data(), ref_aty.data(), slices);
      // The blocks hold fp16 weights: agreement to fp16 rounding.
      EXPECT_LT(testing::relative_error(ax, ref_ax), 1e-3);
      EXPECT_LT(testing::relative_error(aty, ref_aty), 1e-3);
      // Same fp16 weights both ways, exact sums: adjoint to float rounding.
      EXPECT_NEAR(testing::dot(ax, y) / testing::dot(x, aty), 1.0, 1e-5);
    }
  }
}

TEST(Symmetry, GatheredProductsRefuseOtherMatrices) {
  const ImageGrid2d grid{32, 32, 1.0};
  const Geometry2d g = testing::small_parallel(64, 48, 32.0);
  TensorCoreMatrixOptions options;
  options.shape = WmmaShape::kM32N8K16;
  options.symmetric = true;
  const TensorCoreMatrix shape32 = build_tensorcore_matrix(testing::pool(), g, grid, options);
  EXPECT_NE(gathered_symmetry_problem(shape32).find("16 x 16"), std::string::npos);
  EXPECT_EQ(shape32.gathered_forward.block_count(), 0);
  EXPECT_EQ(shape32.gathered_backward.block_count(), 0);
  EXPECT_THROW(make_symmetric_gather_tables(shape32), std::invalid_argument);
  options.shape = WmmaShape::kM16N16K16;
  options.symmetric = false;
  const TensorCoreMatrix plain = build_tensorcore_matrix(testing::pool(), g, grid, options);
  EXPECT_NE(gathered_symmetry_problem(plain).find("not the symmetric"), std::string::npos);
}

}  // namespace
}  // namespace slicestream::tensorcore
