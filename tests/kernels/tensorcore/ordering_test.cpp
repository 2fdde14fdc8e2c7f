// Renumbering of rows and columns: pseudo-Morton (Alg. 2) bijection, round trip and locality; the
// ray-sheared layouts; and their effect on the number of non-empty blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "kernels/tensorcore/bsr_matrix.hpp"
#include "kernels/tensorcore/pseudo_morton.hpp"
#include "kernels/tensorcore/ray_sheared_ordering.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"
#include "tests/kernels/tensorcore/tensorcore_test_support.hpp"
#include "tests/support/block_count.hpp"
#include "tests/support/operand_transforms_cpu.hpp"

namespace slicestream::tensorcore {
namespace {

// Empty when to_mapped and to_original are inverse bijections onto the used slots.
std::string validate_mapping(const IndexMapping& mapping) {
  long long used = 0;
  for (std::size_t slot = 0; slot < mapping.to_original.size(); ++slot) {
    const std::int32_t original = mapping.to_original[slot];
    if (original == -1) continue;
    ++used;
    if (original < 0 || original >= mapping.size() ||
        mapping.to_mapped[static_cast<std::size_t>(original)] != static_cast<std::int32_t>(slot)) {
      return "to_original and to_mapped disagree at slot " + std::to_string(slot);
    }
  }
  if (used != mapping.size()) return "some original indices have no slot";
  return {};
}

TEST(PseudoMorton, FollowsAlgorithmTwo) {
  // bx = 4, by = 2 on a 16 x 8 space (padded height 8): hand-evaluated Alg. 2.
  const PseudoMortonParams p{4, 2};
  EXPECT_EQ(pseudo_morton_index(0, 0, 8, p), 0);
  EXPECT_EQ(pseudo_morton_index(1, 0, 8, p), 2);   // tx = 1 -> 1 * by
  EXPECT_EQ(pseudo_morton_index(0, 1, 8, p), 1);   // ty = 1
  EXPECT_EQ(pseudo_morton_index(4, 0, 8, p), 16);  // next level-1 tile along x: t2x = 1 -> i1 = 2
  EXPECT_EQ(pseudo_morton_index(0, 2, 8, p), 8);   // t2y = 1 -> i1 = 1
  EXPECT_EQ(pseudo_morton_index(0, 4, 8, p), 64);  // b2y = 1 -> i1 = 8
  EXPECT_EQ(pseudo_morton_index(15, 7, 8, p), 127);
}

TEST(PseudoMorton, RoundTripAndLocality) {
  for (auto [w, h] : {std::pair{64, 64}, std::pair{512, 720}, std::pair{50, 37}}) {
    const IndexMapping m = make_pseudo_morton_mapping(w, h);
    ASSERT_EQ(validate_mapping(m), "") << w << "x" << h;
    EXPECT_EQ(m.mapped_size() % 16, 0);
    EXPECT_GE(m.mapped_size(), static_cast<long long>(w) * h);
    const int columns = 3;
    const std::vector<float> data =
        testing::random_vector(static_cast<std::size_t>(w * h * columns), 3);
    std::vector<float> mapped(static_cast<std::size_t>(m.mapped_size() * columns), -7.0f);
    std::vector<float> back(data.size(), 0.0f);
    map_rows(m, data.data(), mapped.data(), columns);
    unmap_rows(m, mapped.data(), back.data(), columns);
    EXPECT_EQ(back, data);
    for (long long slot = 0; slot < m.mapped_size(); ++slot) {
      if (m.to_original[static_cast<std::size_t>(slot)] < 0) {
        EXPECT_EQ(mapped[static_cast<std::size_t>(slot * columns)], 0.0f);  // padding is zero
      }
    }
  }
  // 16 consecutive slots are a 4 x 4 square, 8 a 4 x 2 tile (x by y).
  const IndexMapping m = make_pseudo_morton_mapping(64, 64);
  for (long long start = 0; start < m.mapped_size(); start += 16) {
    std::set<int> xs, ys;
    for (long long s = start; s < start + 16; ++s) {
      const int original = m.to_original[static_cast<std::size_t>(s)];
      xs.insert(original % 64);
      ys.insert(original / 64);
    }
    EXPECT_EQ(xs.size(), 4u);
    EXPECT_EQ(ys.size(), 4u);
    EXPECT_EQ(*xs.rbegin() - *xs.begin(), 3);
  }
  EXPECT_THROW(make_pseudo_morton_mapping(8, 8, {3, 2}), std::invalid_argument);
  EXPECT_THROW(mapping_from_slots({0, 0}, 4), std::invalid_argument);
  EXPECT_THROW(mapping_from_slots({0, 4}, 4), std::invalid_argument);
}

TEST(RaySheared, LayoutsAreBijectionsAlongTheRays) {
  const ImageGrid2d grid{48, 48, 1.0};
  const Geometry2d g = testing::small_parallel(64, 96, 48.0);
  const RayShearedParams params = ray_sheared_params(8);
  const ColumnLayouts cols = ray_sheared_columns(g, grid, params);
  ASSERT_EQ(cols.layouts.size(), static_cast<std::size_t>(params.sectors));
  const std::vector<int> sectors = projection_sectors(g, params.sectors);
  for (int s = 0; s < params.sectors; ++s) {
    const IndexMapping& layout = cols.layouts[static_cast<std::size_t>(s)];
    ASSERT_EQ(validate_mapping(layout), "");
    EXPECT_EQ(cols.offset[static_cast<std::size_t>(s)] % 16, 0);
    // Pixels of a 16-slot tile lie within a band of 3 pixels across the sector's direction.
    const double direction = s * testing::kPi / params.sectors;
    const Vec2 normal{-std::sin(direction), std::cos(direction)};
    for (long long start = 0; start < layout.mapped_size(); start += 16) {
      double lo = 1e9, hi = -1e9;
      for (long long slot = start; slot < start + 16; ++slot) {
        const int p = layout.to_original[static_cast<std::size_t>(slot)];
        if (p < 0) continue;
        const double across = dot(normal, Vec2{p % 48 + 0.5, p / 48 + 0.5});
        lo = std::min(lo, across);
        hi = std::max(hi, across);
      }
      if (hi >= lo) {
        EXPECT_LE(hi - lo, 3.0) << "sector " << s << " tile " << start / 16;
      }
    }
  }
  for (int k = 0; k < g.angles(); ++k) {
    EXPECT_EQ(cols.layout_of_ray(static_cast<long long>(k) * g.bins),
              sectors[static_cast<std::size_t>(k)]);
  }
  const IndexMapping rows = ray_sheared_row_mapping(g, params);
  ASSERT_EQ(validate_mapping(rows), "");
  // A block row of 8 never mixes sectors.
  for (long long start = 0; start < rows.mapped_size(); start += 8) {
    std::set<int> block_sectors;
    for (long long slot = start; slot < start + 8; ++slot) {
      const int r = rows.to_original[static_cast<std::size_t>(slot)];
      if (r >= 0) block_sectors.insert(sectors[static_cast<std::size_t>(r / g.bins)]);
    }
    EXPECT_LE(block_sectors.size(), 1u);
  }
  // Replicating into every layout and summing back multiplies by the number of layouts.
  const std::vector<float> image =
      testing::random_vector(static_cast<std::size_t>(grid.pixels() * 2), 4);
  std::vector<float> wide(static_cast<std::size_t>(cols.mapped_size * 2)), back(image.size());
  replicate_columns(cols, image.data(), wide.data(), 2);
  sum_columns(cols, wide.data(), back.data(), 2);
  for (std::size_t i = 0; i < image.size(); ++i)
    EXPECT_FLOAT_EQ(back[i], params.sectors * image[i]);
}

TEST(BlockOrdering, MappingsMakeBlocksDenser) {
  // Paper Table 3 in miniature: pseudo-Morton cuts the non-empty blocks, ray-sheared cuts more.
  const ImageGrid2d grid{64, 64, 1.0};
  const Geometry2d g = testing::small_parallel(180, 128, 64.0);
  const CsrMatrix a = build_dd_matrix(testing::pool(), g, grid);
  for (WmmaShape shape : kAllWmmaShapes) {
    const int m = dims(shape).m;
    const auto stored = [&](BlockOrdering ordering) {
      const BlockCount count = count_blocks(testing::pool(), a, make_row_mapping(g, ordering, m),
                                            make_col_layouts(g, grid, ordering, m), m, 16);
      return count.nonempty;
    };
    const long long natural = stored(BlockOrdering::kNatural);
    const long long morton = stored(BlockOrdering::kPseudoMorton);
    const long long sheared = stored(BlockOrdering::kRaySheared);
    EXPECT_LT(morton, natural) << to_string(shape);
    EXPECT_LT(sheared, morton) << to_string(shape);
  }
}

}  // namespace
}  // namespace slicestream::tensorcore
