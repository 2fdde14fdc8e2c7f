#include "kernels/tensorcore/grouped_blocks.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace slicestream::tensorcore {

namespace {

// One group's chunks: tiles, masks and, per chunk, its blocks' ids in bit order.
struct GroupPlan {
  std::vector<std::int32_t> tiles;
  std::vector<std::uint64_t> masks;
  std::vector<std::int32_t> block_ids;  // in chunk order
  std::vector<std::int32_t> chunk_sizes;
};

GroupPlan plan_group(const BsrMatrixHalf& bsr, long long first_row) {
  const long long last_row = std::min(bsr.block_row_count(), first_row + kGroupRows);
  // (block column, row in group, block id), sorted by column then row to number the tiles.
  struct Entry {
    std::int32_t col, row, id;
    std::int32_t chunk = 0, bit = 0;  // where the block goes
  };
  std::vector<Entry> entries;
  for (long long r = first_row; r < last_row; ++r) {
    for (std::int32_t i = bsr.row_ptr[static_cast<std::size_t>(r)];
         i < bsr.row_ptr[static_cast<std::size_t>(r) + 1]; ++i) {
      entries.push_back({bsr.col_index[static_cast<std::size_t>(i)],
                         static_cast<std::int32_t>(r - first_row), i});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.col != b.col ? a.col < b.col : a.row < b.row;
  });
  GroupPlan plan;
  int tile = -1;  // position of the current tile within its chunk
  for (std::size_t e = 0; e < entries.size(); ++e) {
    if (e == 0 || entries[e].col != entries[e - 1].col) {
      if (++tile == kChunkTiles || e == 0) {  // open a chunk
        tile = 0;
        plan.tiles.insert(plan.tiles.end(), kChunkTiles, -1);
        plan.masks.push_back(0);
        plan.chunk_sizes.push_back(0);
      }
      plan.tiles[plan.tiles.size() - kChunkTiles + static_cast<std::size_t>(tile)] = entries[e].col;
    }
    entries[e].chunk = static_cast<std::int32_t>(plan.masks.size()) - 1;
    entries[e].bit = chunk_bit(entries[e].row, tile);
    plan.masks.back() |= std::uint64_t{1} << entries[e].bit;
    ++plan.chunk_sizes.back();
  }
  // The blocks in bit order within each chunk.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.chunk != b.chunk ? a.chunk < b.chunk : a.bit < b.bit;
  });
  for (const Entry& entry : entries)
    plan.block_ids.push_back(entry.id);
  return plan;
}

// The blocks of group g in chunk order; the plan's block ids are in the same order as chunk_block.
void copy_group_blocks(const BsrMatrixHalf& bsr, const GroupPlan& plan, std::size_t g,
                       GroupedBlocks& out) {
  const auto first =
      static_cast<std::size_t>(out.chunk_block[static_cast<std::size_t>(out.group_chunk[g])]);
  for (std::size_t i = 0; i < plan.block_ids.size(); ++i) {
    std::memcpy(out.blocks.data() + (first + i) * 256,
                bsr.blocks.data() + static_cast<std::size_t>(plan.block_ids[i]) * 256,
                256 * sizeof(std::uint16_t));
  }
}

}  // namespace

GroupedBlocks group_blocks(Executor& executor, const BsrMatrixHalf& bsr) {
  if (bsr.block_rows != 16 || bsr.block_cols != 16) {
    throw std::invalid_argument("group_blocks: needs 16 x 16 blocks");
  }
  const long long groups = (bsr.block_row_count() + kGroupRows - 1) / kGroupRows;
  std::vector<GroupPlan> plans(static_cast<std::size_t>(groups));
  executor.parallel_for(static_cast<std::size_t>(groups), 1,
                        [&](std::size_t begin, std::size_t end, int) {
                          for (std::size_t g = begin; g < end; ++g)
                            plans[g] = plan_group(bsr, static_cast<long long>(g) * kGroupRows);
                        });

  GroupedBlocks out;
  out.rows = bsr.rows;
  out.cols = bsr.cols;
  out.value_scale = bsr.value_scale;
  out.group_chunk.reserve(static_cast<std::size_t>(groups) + 1);
  out.group_chunk.push_back(0);
  out.chunk_block.push_back(0);
  for (GroupPlan& p : plans) {
    out.chunk_tile.insert(out.chunk_tile.end(), p.tiles.begin(), p.tiles.end());
    out.chunk_mask.insert(out.chunk_mask.end(), p.masks.begin(), p.masks.end());
    for (std::int32_t size : p.chunk_sizes)
      out.chunk_block.push_back(out.chunk_block.back() + size);
    out.group_chunk.push_back(static_cast<std::int32_t>(out.chunk_mask.size()));
  }
  out.blocks.resize(bsr.blocks.size());
  executor.parallel_for(static_cast<std::size_t>(groups), 1,
                        [&](std::size_t begin, std::size_t end, int) {
                          for (std::size_t g = begin; g < end; ++g)
                            copy_group_blocks(bsr, plans[g], g, out);
                        });
  return out;
}

}  // namespace slicestream::tensorcore
