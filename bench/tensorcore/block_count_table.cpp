// The paper's Table 3: non-empty blocks before (natural order) and after each mapping, for every
// fragment shape (no GPU needed).
#include <cmath>
#include <cstdio>

#include "bench/tensorcore/tensorcore_bench_run.hpp"
#include "tests/support/block_count.hpp"

namespace slicestream::tensorcore::bench {

Json block_count_table(const SizeRun& run) {
  const CsrMatrix& a = run.a;
  Json blocks;
  for (WmmaShape shape : kAllWmmaShapes) {
    const int m = dims(shape).m;
    // The paper's block count (Table 3): the plain grid of the unmapped matrix; ray-sheared
    // layouts pad more columns, so its share is quoted against this count too.
    const double grid_blocks =
        std::ceil(static_cast<double>(a.rows) / m) * std::ceil(static_cast<double>(a.cols) / 16);
    Json js;
    for (BlockOrdering ordering :
         {BlockOrdering::kNatural, BlockOrdering::kPseudoMorton, BlockOrdering::kRaySheared}) {
      const BlockCount count =
          count_blocks(run.pool, a, make_row_mapping(run.geometry(), ordering, m),
                       make_col_layouts(run.geometry(), run.grid(), ordering, m), m, 16);
      const double fill = 100.0 * a.nnz() / (static_cast<double>(count.nonempty) * m * 16);
      js.obj(to_string(ordering), Json()
                                      .num("nonempty", static_cast<double>(count.nonempty))
                                      .num("possible", grid_blocks)
                                      .num("nonempty_percent", 100.0 * count.nonempty / grid_blocks)
                                      .num("fill_percent", fill));
      std::printf(
          "  blocks %-8s %-13s non-empty %6.2f%% of %.1fe6, fill %5.1f%%, fp16 blocks %.2f GB\n",
          to_string(shape), to_string(ordering), 100.0 * count.nonempty / grid_blocks,
          grid_blocks / 1e6, fill, count.nonempty * m * 16 * 2.0 / 1e9);
    }
    blocks.obj(to_string(shape), js);
  }
  return blocks;
}

}  // namespace slicestream::tensorcore::bench
