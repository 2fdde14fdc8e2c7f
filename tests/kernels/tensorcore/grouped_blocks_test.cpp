// The grouped block layout (grouped_blocks.hpp): every block of the BSR matrix is stored once, in
// its chunk, at the place the chunk's mask gives it, with its tile and row; chunks hold at most
// kChunkTiles distinct tiles in ascending order.
#include <gtest/gtest.h>

#include <bitset>
#include <set>
#include <string>
#include <utility>

#include "kernels/tensorcore/grouped_blocks.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"
#include "tests/kernels/tensorcore/tensorcore_test_support.hpp"

namespace slicestream::tensorcore {
namespace {

// Expands the grouped layout back to (block row, block column) -> weights and compares it with
// the BSR matrix it came from.
void expect_same_blocks(const GroupedBlocks& grouped, const BsrMatrixHalf& bsr) {
  ASSERT_EQ(grouped.rows, bsr.rows);
  ASSERT_EQ(grouped.cols, bsr.cols);
  ASSERT_EQ(grouped.value_scale, bsr.value_scale);
  ASSERT_EQ(grouped.block_count(), bsr.block_count());
  ASSERT_EQ(grouped.group_count(), (bsr.block_row_count() + kGroupRows - 1) / kGroupRows);
  ASSERT_EQ(grouped.chunk_block.back(), bsr.block_count());
  std::set<std::pair<long long, int>> seen;
  for (long long group = 0; group < grouped.group_count(); ++group) {
    int previous_tile = -1;
    for (int c = grouped.group_chunk[static_cast<std::size_t>(group)];
         c < grouped.group_chunk[static_cast<std::size_t>(group) + 1]; ++c) {
      const std::uint64_t mask = grouped.chunk_mask[static_cast<std::size_t>(c)];
      ASSERT_EQ(std::bitset<64>(mask).count(),
                static_cast<std::size_t>(grouped.chunk_block[static_cast<std::size_t>(c) + 1] -
                                         grouped.chunk_block[static_cast<std::size_t>(c)]));
      const int first = grouped.chunk_block[static_cast<std::size_t>(c)];
      for (int t = 0; t < kChunkTiles; ++t) {
        const int tile = grouped.chunk_tile[static_cast<std::size_t>(c) * kChunkTiles + t];
        if (tile < 0) {
          EXPECT_EQ(mask & tile_bits(t), 0u) << "no blocks in a padding tile";
          continue;
        }
        EXPECT_GT(tile, previous_tile) << "tiles ascend within a group";
        EXPECT_NE(mask & tile_bits(t), 0u) << "every tile holds a block";
        previous_tile = tile;
        for (int r = 0; r < kGroupRows; ++r) {
          const int bit = chunk_bit(r, t);
          if (((mask >> bit) & 1u) == 0) continue;
          const long long block_row = group * kGroupRows + r;
          ASSERT_LT(block_row, bsr.block_row_count());
          EXPECT_TRUE(seen.insert({block_row, tile}).second) << "stored once";
          // The BSR block (block_row, tile) must hold the same weights; the grouped blocks are in
          // bit order.
          int found = -1;
          for (int i = bsr.row_ptr[static_cast<std::size_t>(block_row)];
               i < bsr.row_ptr[static_cast<std::size_t>(block_row) + 1]; ++i) {
            if (bsr.col_index[static_cast<std::size_t>(i)] == tile) found = i;
          }
          ASSERT_GE(found, 0) << "block (" << block_row << ", " << tile << ") is not in the BSR";
          const auto id = static_cast<std::size_t>(first) +
                          std::bitset<64>(mask & ((std::uint64_t{1} << bit) - 1)).count();
          for (int e = 0; e < 256; ++e) {
            ASSERT_EQ(grouped.blocks[id * 256 + e],
                      bsr.blocks[static_cast<std::size_t>(found) * 256 + e]);
          }
        }
      }
    }
  }
  EXPECT_EQ(static_cast<long long>(seen.size()), bsr.block_count());
}

TensorCoreMatrix plain_matrix(WmmaShape shape, const Geometry2d& g, const ImageGrid2d& grid) {
  TensorCoreMatrixOptions options;
  options.shape = shape;
  return build_tensorcore_matrix(testing::pool(), g, grid, options);
}

TEST(GroupedBlocks, HoldEveryBlockOnceWhereTheMaskSays) {
  const ImageGrid2d grid{40, 40, 0.5};
  bool ragged = false;
  for (const Geometry2d& g :
       {testing::small_parallel(60, 72, 20.0), testing::small_fan(44, 56, 20.0, 0.7)}) {
    SCOPED_TRACE(to_string(g.beam));
    const TensorCoreMatrix m = plain_matrix(WmmaShape::kM16N16K16, g, grid);
    expect_same_blocks(group_blocks(testing::pool(), m.bsr), m.bsr);
    ragged = ragged || m.bsr.block_row_count() % kGroupRows != 0;
    InlineExecutor one_thread;
    expect_same_blocks(group_blocks(one_thread, m.bsr), m.bsr);
  }
  EXPECT_TRUE(ragged) << "a last group with fewer than kGroupRows block rows was covered";
}

TEST(GroupedBlocks, NeighbouringRowsShareTiles) {
  // The point of the layout: fewer operand tiles than blocks.
  const TensorCoreMatrix m = plain_matrix(
      WmmaShape::kM16N16K16, testing::small_parallel(120, 96, 64.0), ImageGrid2d{64, 64, 1.0});
  const GroupedBlocks grouped = group_blocks(testing::pool(), m.bsr);
  long long tiles = 0;
  for (std::int32_t tile : grouped.chunk_tile)
    tiles += tile >= 0 ? 1 : 0;
  EXPECT_LT(tiles, m.bsr.block_count() / 2);
}

TEST(GroupedBlocks, RefuseOtherBlockShapes) {
  const TensorCoreMatrix m = plain_matrix(
      WmmaShape::kM32N8K16, testing::small_parallel(32, 48, 32.0), ImageGrid2d{32, 32, 1.0});
  EXPECT_THROW(group_blocks(testing::pool(), m.bsr), std::invalid_argument);
}

}  // namespace
}  // namespace slicestream::tensorcore
