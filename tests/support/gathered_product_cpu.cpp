#include "tests/support/gathered_product_cpu.hpp"

#include <vector>

#include "kernels/half_float.hpp"
#include "kernels/tensorcore/square_symmetry.hpp"

namespace slicestream::tensorcore {
namespace {

// The products of one group of block rows under one transform: `src` and `dst` are the tables'
// entries of that transform.
void add_group(const GroupedBlocks& blocks, const std::int32_t* src, const std::int32_t* dst,
               const float* in, float* out, int slices, long long group) {
  std::vector<double> acc(static_cast<std::size_t>(kGroupRows) * 16 * slices, 0.0);
  for (std::int32_t c = blocks.group_chunk[static_cast<std::size_t>(group)];
       c < blocks.group_chunk[static_cast<std::size_t>(group) + 1]; ++c) {
    const std::uint64_t mask = blocks.chunk_mask[static_cast<std::size_t>(c)];
    std::int32_t id = blocks.chunk_block[static_cast<std::size_t>(c)];
    for (int bit = 0; bit < kChunkTiles * kGroupRows; ++bit) {  // bit order: (row, tile)
      if (((mask >> bit) & 1u) == 0) continue;
      const int row = chunk_bit_row(bit);
      const long long col0 =
          16LL * blocks.chunk_tile[static_cast<std::size_t>(c) * kChunkTiles +
                                   static_cast<std::size_t>(chunk_bit_tile(bit))];
      const std::uint16_t* block = blocks.blocks.data() + static_cast<std::size_t>(id++) * 256;
      for (int k = 0; k < 16; ++k) {
        const std::int32_t row_in = src[col0 + k];
        if (row_in < 0) continue;
        const float* x = in + static_cast<std::size_t>(row_in) * slices;
        for (int i = 0; i < 16; ++i) {
          const double a = half_to_float(block[i * 16 + k]);
          if (a == 0) continue;
          double* y = acc.data() + static_cast<std::size_t>(row * 16 + i) * slices;
          for (int s = 0; s < slices; ++s)
            y[s] += a * x[s];
        }
      }
    }
  }
  for (int row = 0; row < kGroupRows; ++row) {
    const long long block_row = group * kGroupRows + row;
    if (block_row >= blocks.block_row_count()) break;
    for (int i = 0; i < 16; ++i) {
      const std::int32_t row_out = dst[block_row * 16 + i];
      if (row_out < 0) continue;
      float* y = out + static_cast<std::size_t>(row_out) * slices;
      const double* sum = acc.data() + static_cast<std::size_t>(row * 16 + i) * slices;
      for (int s = 0; s < slices; ++s)
        y[s] += static_cast<float>(blocks.value_scale * sum[s]);
    }
  }
}

}  // namespace

void gathered_product_cpu(Executor& executor, const GroupedBlocks& blocks,
                          const std::int32_t* source, const std::int32_t* target, const float* in,
                          float* out, int slices) {
  for (int g = 0; g < kSymmetryCount; ++g) {
    const std::int32_t* src = source + g * blocks.cols;
    const std::int32_t* dst = target + g * blocks.rows;
    // Groups in parallel: within one g every output row has one source row (g is a bijection),
    // so no two groups write the same output.
    executor.parallel_for(static_cast<std::size_t>(blocks.group_count()), 1,
                          [&](std::size_t begin, std::size_t end, int) {
                            for (std::size_t group = begin; group < end; ++group) {
                              add_group(blocks, src, dst, in, out, slices,
                                        static_cast<long long>(group));
                            }
                          });
  }
}

}  // namespace slicestream::tensorcore
