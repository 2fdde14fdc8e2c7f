// fp16 BSR storage: conversions, the BSR products against CSR and a dense matrix, the transposed
// product from the same blocks, memory accounting, the CPU twin of the projector, and its model
// of tensor core accumulation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/half_float.hpp"
#include "kernels/tensorcore/bsr_matrix.hpp"
#include "kernels/tensorcore/operand_scaling.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"
#include "tests/kernels/tensorcore/tensorcore_test_support.hpp"
#include "tests/support/bsr_multiply_cpu.hpp"
#include "tests/support/bsr_projector_cpu.hpp"
#include "tests/support/mma_accumulation_model.hpp"

namespace slicestream::tensorcore {
namespace {

TEST(OperandScaling, PutsTheLargestMagnitudeBelowTwoToTheFourteen) {
  for (float max_abs : {1e-6f, 0.02f, 1.0f, 3.7f, 1e4f, 6e4f}) {
    const float scaled = max_abs * half_operand_scale(max_abs);
    EXPECT_GE(scaled, 8192.0f);
    EXPECT_LT(scaled, 16384.0f);
  }
  EXPECT_EQ(half_operand_scale(0.0f), 1.0f);
  EXPECT_EQ(half_operand_scale(std::numeric_limits<float>::infinity()), 1.0f);
}

struct Problem {
  ImageGrid2d grid{40, 36, 0.5};
  Geometry2d geometry = testing::small_parallel(48, 72, 20.0, 0.3);
  CsrMatrix a = build_dd_matrix(testing::pool(), geometry, grid);
};

TEST(BsrMatrix, ProductsMatchCsrAndDense) {
  const Problem p;
  const int columns = 8;
  for (BlockOrdering ordering :
       {BlockOrdering::kNatural, BlockOrdering::kPseudoMorton, BlockOrdering::kRaySheared}) {
    for (WmmaShape shape : kAllWmmaShapes) {
      TensorCoreMatrixOptions options;
      options.shape = shape;
      options.ordering = ordering;
      const TensorCoreMatrix m =
          build_tensorcore_matrix(testing::pool(), p.a, p.geometry, p.grid, options, nullptr);
      const BsrMatrixHalf& bsr = m.bsr;
      SCOPED_TRACE(std::string(to_string(shape)) + " " + to_string(ordering));
      ASSERT_EQ(bsr.rows % bsr.block_rows, 0);
      ASSERT_EQ(bsr.cols % 16, 0);
      EXPECT_EQ(bsr.block_rows, dims(shape).m);
      EXPECT_EQ(bsr.blocks.size(),
                static_cast<std::size_t>(bsr.block_count() * bsr.block_elements()));
      EXPECT_EQ(bsr.bytes(),
                bsr.blocks.size() * 2 + 4 * (bsr.row_ptr.size() + bsr.col_ptr.size() +
                                             3 * static_cast<std::size_t>(bsr.block_count())));
      EXPECT_EQ(bsr.col_ptr.back(), bsr.block_count());

      // Reference from the decoded fp16 entries (every stored value, zeros included), in the
      // mapped spaces.
      struct Entry {
        long long row, col;
        double w;
      };
      std::vector<Entry> entries;
      long long nonzero = 0;
      for (long long br = 0; br < bsr.block_row_count(); ++br) {
        for (int b = bsr.row_ptr[static_cast<std::size_t>(br)];
             b < bsr.row_ptr[static_cast<std::size_t>(br) + 1]; ++b) {
          for (int r = 0; r < bsr.block_rows; ++r) {
            for (int k = 0; k < 16; ++k) {
              const double w =
                  bsr.value_scale *
                  half_to_float(
                      bsr.blocks[static_cast<std::size_t>(b * bsr.block_elements() + r * 16 + k)]);
              nonzero += w != 0;
              entries.push_back({br * bsr.block_rows + r,
                                 bsr.col_index[static_cast<std::size_t>(b)] * 16LL + k, w});
            }
          }
        }
      }
      EXPECT_LE(nonzero, p.a.nnz());  // a weight below fp16's range may round to 0
      EXPECT_GE(nonzero, p.a.nnz() * 999 / 1000);
      const std::vector<float> x =
          testing::random_vector(static_cast<std::size_t>(bsr.cols * columns), 21);
      std::vector<float> y(static_cast<std::size_t>(bsr.rows * columns));
      std::vector<double> y_ref(y.size(), 0.0);
      bsr_multiply_cpu(testing::pool(), bsr, x.data(), y.data(), columns);
      for (const Entry& e : entries) {
        for (int c = 0; c < columns; ++c)
          y_ref[static_cast<std::size_t>(e.row * columns + c)] +=
              e.w * x[static_cast<std::size_t>(e.col * columns + c)];
      }
      EXPECT_LT(testing::relative_error(y, std::vector<float>(y_ref.begin(), y_ref.end())), 1e-6);
      const std::vector<float> yt =
          testing::random_vector(static_cast<std::size_t>(bsr.rows * columns), 22);
      std::vector<float> xt(static_cast<std::size_t>(bsr.cols * columns));
      std::vector<double> xt_ref(xt.size(), 0.0);
      bsr_multiply_transposed_cpu(testing::pool(), bsr, yt.data(), xt.data(), columns);
      for (const Entry& e : entries) {
        for (int c = 0; c < columns; ++c)
          xt_ref[static_cast<std::size_t>(e.col * columns + c)] +=
              e.w * yt[static_cast<std::size_t>(e.row * columns + c)];
      }
      EXPECT_LT(testing::relative_error(xt, std::vector<float>(xt_ref.begin(), xt_ref.end())),
                1e-6);

      // Against the fp32 CSR matrix in the original spaces: fp16 weights (and, through the
      // projector, fp16 operands) cost about 1e-3.
      BsrProjectorCpu projector(std::make_shared<TensorCoreMatrix>(m), testing::pool());
      const std::vector<float> image =
          testing::random_vector(static_cast<std::size_t>(p.grid.pixels() * 2), 23, 0, 1);
      std::vector<float> sino(static_cast<std::size_t>(p.geometry.rays() * 2)),
          sino_csr(sino.size());
      projector.forward(image.data(), sino.data(), 2);
      csr_multiply(testing::pool(), p.a, image.data(), sino_csr.data(), 2);
      EXPECT_LT(testing::relative_error(sino, sino_csr), 2e-3);
      const std::vector<float> rays = testing::random_vector(sino.size(), 24, 0, 1);
      std::vector<float> back(image.size()), back_csr(image.size());
      projector.backward(rays.data(), back.data(), 2);
      csr_multiply_transposed(testing::pool(), p.a, rays.data(), back_csr.data(), 2);
      EXPECT_LT(testing::relative_error(back, back_csr), 2e-3);
    }
  }
}

TEST(BsrMatrix, CompensatedOperandsLeaveOnlyTheWeightRounding) {
  // With hi + lo fp16 operands (about 22 bits) the twin equals the CSR product with fp16-rounded
  // weights to single-precision accuracy.
  const Problem p;
  CsrMatrix rounded = p.a;
  for (float& v : rounded.values) {
    v = half_to_float(float_to_half(v / static_cast<float>(p.grid.pixel_mm))) *
        static_cast<float>(p.grid.pixel_mm);
  }
  TensorCoreMatrixOptions options;
  options.shape = WmmaShape::kM16N16K16;
  const auto m = std::make_shared<TensorCoreMatrix>(
      build_tensorcore_matrix(testing::pool(), p.a, p.geometry, p.grid, options, nullptr));
  BsrProjectorCpu plain(m, testing::pool());
  BsrProjectorCpu compensated(m, testing::pool(), {true, {}});
  const int columns = 3;
  const std::vector<float> x =
      testing::random_vector(static_cast<std::size_t>(p.grid.pixels() * columns), 51);
  std::vector<float> y(static_cast<std::size_t>(p.geometry.rays() * columns)), y_plain(y.size()),
      y_ref(y.size());
  compensated.forward(x.data(), y.data(), columns);
  plain.forward(x.data(), y_plain.data(), columns);
  csr_multiply(testing::pool(), rounded, x.data(), y_ref.data(), columns);
  EXPECT_LT(testing::relative_error(y, y_ref), 2e-6);
  EXPECT_GT(testing::relative_error(y_plain, y_ref), 1e-5);  // fp16 operands alone do not get there
  const std::vector<float> r = testing::random_vector(y.size(), 52);
  std::vector<float> b(x.size()), b_ref(x.size());
  compensated.backward(r.data(), b.data(), columns);
  csr_multiply_transposed(testing::pool(), rounded, r.data(), b_ref.data(), columns);
  EXPECT_LT(testing::relative_error(b, b_ref), 2e-6);
}

TEST(MmaAccumulation, OneStepAlignsTruncatesAndRoundsTowardZero) {
  using mma_model::step;
  // 1 + 2^-24 + 2^-30: exact rounding gives 1 + 2^-23; the model drops the bits below 2^-23
  // relative to the largest term.
  const double small[2] = {1.0, 0x1p-24 + 0x1p-30};
  EXPECT_EQ(step(0.0f, small, 2, 24), 1.0f);
  EXPECT_EQ(step(0.0f, small, 2, 27), 1.0f);  // still below 2^-26 after rounding toward zero
  // Products below the accumulator's last bit vanish, however many there are.
  const double tiny[16] = {0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25,
                           0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25};
  EXPECT_EQ(step(1.0f, tiny, 16, 24), 1.0f);  // exact: 1 + 2^-21
  // Exact when everything fits; negative terms truncate toward zero too.
  const double mixed[3] = {3.0, -0.5, 0.25};
  EXPECT_EQ(step(1.0f, mixed, 3, 24), 3.75f);
  const double negative[2] = {-1.0, -(0x1p-24 + 0x1p-30)};
  EXPECT_EQ(step(0.0f, negative, 2, 24), -1.0f);
  const double zeros[2] = {0.0, 0.0};
  EXPECT_EQ(step(0.0f, zeros, 2, 24), 0.0f);
}

TEST(MmaAccumulation, LongChainsBiasTowardZeroAndSplittingThemHelps) {
  // Non-negative weights and operands: every truncation lowers the sums, so the modelled products
  // never exceed the exact ones; chains of kMmaChainBlocks blocks lose far less than one chain
  // over the whole row.
  const Problem p;
  TensorCoreMatrixOptions options;
  options.shape = WmmaShape::kM16N16K16;
  const TensorCoreMatrix m =
      build_tensorcore_matrix(testing::pool(), p.a, p.geometry, p.grid, options, nullptr);
  const int columns = 2;
  const std::vector<float> x =
      testing::random_vector(static_cast<std::size_t>(m.bsr.cols * columns), 61, 0, 1);
  std::vector<float> exact(static_cast<std::size_t>(m.bsr.rows * columns)), chain(exact.size()),
      split(exact.size());
  MmaAccumulation model;
  model.emulate = true;
  bsr_multiply_cpu(testing::pool(), m.bsr, x.data(), exact.data(), columns);
  bsr_multiply_cpu(testing::pool(), m.bsr, x.data(), chain.data(), columns, model);
  model.chain_blocks = kMmaChainBlocks;
  bsr_multiply_cpu(testing::pool(), m.bsr, x.data(), split.data(), columns, model);
  double loss_chain = 0, loss_split = 0, total = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    ASSERT_LE(chain[i], exact[i]) << i;
    ASSERT_LE(split[i], exact[i]) << i;
    loss_chain += exact[i] - chain[i];
    loss_split += exact[i] - split[i];
    total += exact[i];
  }
  EXPECT_GT(loss_chain, 0);
  EXPECT_LT(loss_chain / total, 1e-5);
  EXPECT_LT(loss_split, 0.5 * loss_chain);
  // The transposed product follows the same model.
  const std::vector<float> y =
      testing::random_vector(static_cast<std::size_t>(m.bsr.rows * columns), 62, 0, 1);
  std::vector<float> back_exact(x.size()), back_chain(x.size());
  bsr_multiply_transposed_cpu(testing::pool(), m.bsr, y.data(), back_exact.data(), columns);
  model.chain_blocks = 0;
  bsr_multiply_transposed_cpu(testing::pool(), m.bsr, y.data(), back_chain.data(), columns, model);
  for (std::size_t i = 0; i < x.size(); ++i)
    ASSERT_LE(back_chain[i], back_exact[i]) << i;
  EXPECT_LT(testing::relative_error(back_chain, back_exact), 1e-5);
  model.step_products = 0;
  EXPECT_THROW(bsr_multiply_cpu(testing::pool(), m.bsr, x.data(), chain.data(), columns, model),
               std::invalid_argument);
}

TEST(BsrMatrix, RefusesMismatchedMappings) {
  const Problem p;
  const IndexMapping rows = identity_mapping(p.a.rows, p.a.rows);
  const ColumnLayouts wrong = single_layout(identity_mapping(p.a.cols - 1, p.a.cols));
  EXPECT_THROW(build_bsr(testing::pool(), p.a, rows, wrong, WmmaShape::kM16N16K16, 1.0f),
               std::invalid_argument);
  const ColumnLayouts cols = single_layout(identity_mapping(p.a.cols, p.a.cols));
  EXPECT_THROW(build_bsr(testing::pool(), p.a, rows, cols, WmmaShape::kM16N16K16, 0.0f),
               std::invalid_argument);
}

}  // namespace
}  // namespace slicestream::tensorcore
