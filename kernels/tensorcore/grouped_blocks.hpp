// 16 x 16 fp16 blocks regrouped so that neighbouring ray blocks share their operand tiles.
//
// The gathered symmetric products (symmetric_gather.hpp) read, for every stored block and every
// one of the 8 transforms, a 16-row tile of the operand (16 pixels x 32 slices). Stored block
// row by block row, each (block, transform) pair reads its own tile, and that L2 traffic bounds
// the kernel. Neighbouring block rows cross nearly the same pixels, though: a few consecutive
// block rows in pseudo-Morton order touch far fewer distinct block columns than they hold blocks
// (docs/performance.md, "Grouped block rows", has the ratios). So the blocks are
// grouped by kGroupRows consecutive block rows; within a group, the distinct block columns
// ("tiles") are taken in ascending order, kChunkTiles at a time ("chunks"), and a chunk's blocks
// are stored together, ordered by (row in the group, tile). A kernel stages one chunk's operand
// tiles once and multiplies them with every block of the chunk.
//
// A chunk's `mask` has bit chunk_bit(r, t) = r * kChunkTiles + t set when row r of the group has a
// block in tile t; the blocks follow in bit order, so block (r, t) is at chunk_block[c] + popcount
// of the mask's bits below chunk_bit(r, t). Row-major bits keep a row's blocks of a chunk
// consecutive (a kernel walks them with a running index) and put rows 0-3 and 4-7 in the low and
// high 32 bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/executor.hpp"
#include "kernels/tensorcore/bsr_matrix.hpp"

namespace slicestream::tensorcore {

inline constexpr int kGroupRows = 8;   // block rows per group
inline constexpr int kChunkTiles = 8;  // tiles per chunk (staged together)
static_assert(kChunkTiles * kGroupRows <= 64, "a chunk's mask is 64 bits");

// The mask bit of row `row` of the group and tile `tile` of the chunk.
constexpr int chunk_bit(int row, int tile) {
  return row * kChunkTiles + tile;
}
// The row and the tile of mask bit `bit` (chunk_bit's inverse).
constexpr int chunk_bit_row(int bit) {
  return bit / kChunkTiles;
}
constexpr int chunk_bit_tile(int bit) {
  return bit % kChunkTiles;
}
// The mask bits of tile 0 (every row of the group) ...
constexpr std::uint64_t tile_zero_bits() {
  std::uint64_t bits = 0;
  for (int row = 0; row < kGroupRows; ++row)
    bits |= std::uint64_t{1} << chunk_bit(row, 0);
  return bits;
}
// ... and of tile `tile` (one shift, also in kernels).
constexpr std::uint64_t tile_bits(int tile) {
  return tile_zero_bits() << tile;
}

struct GroupedBlocks {
  long long rows = 0;  // mapped rows (block rows x 16)
  long long cols = 0;  // mapped columns (block columns x 16)
  float value_scale = 1;
  std::vector<std::int32_t> group_chunk;  // groups + 1: the chunks of each group
  std::vector<std::int32_t> chunk_tile;   // chunks x kChunkTiles: block columns, -1 past the end
  std::vector<std::uint64_t> chunk_mask;  // chunks: bit chunk_bit(row, tile)
  std::vector<std::int32_t> chunk_block;  // chunks + 1: the first block of each chunk
  std::vector<std::uint16_t> blocks;      // fp16 bits, 16 x 16 row-major, in chunk order

  long long block_row_count() const { return rows / 16; }
  long long group_count() const {
    return group_chunk.empty() ? 0 : static_cast<long long>(group_chunk.size()) - 1;
  }
  long long chunk_count() const { return static_cast<long long>(chunk_mask.size()); }
  long long block_count() const { return static_cast<long long>(blocks.size()) / 256; }
  std::size_t bytes() const {
    return blocks.size() * sizeof(std::uint16_t) +
           (group_chunk.size() + chunk_tile.size() + chunk_block.size()) * sizeof(std::int32_t) +
           chunk_mask.size() * sizeof(std::uint64_t);
  }
};

// Regroups `bsr` (16 x 16 blocks; throws std::invalid_argument otherwise). Every block is
// copied once; the weights and value_scale are unchanged.
GroupedBlocks group_blocks(Executor& executor, const BsrMatrixHalf& bsr);

}  // namespace slicestream::tensorcore
