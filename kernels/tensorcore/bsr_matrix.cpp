#include "kernels/tensorcore/bsr_matrix.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/tensorcore/half_float.hpp"
#include "kernels/tensorcore/parallel_for.hpp"

namespace slicestream::tensorcore {

namespace {

long long round_up(long long v, long long m) {
  return (v + m - 1) / m * m;
}

void check_sizes(const CsrMatrix& a, const IndexMapping& rows, const ColumnLayouts& cols) {
  if (rows.size() != a.rows || cols.pixels() != a.cols ||
      (!cols.ray_layout.empty() && static_cast<long long>(cols.ray_layout.size()) != a.rows)) {
    throw std::invalid_argument("BSR: row/column mappings do not match the matrix size");
  }
}

// Per-worker scratch: a stamp per block column (which block row last saw it) and its slot.
struct BlockRowScratch {
  std::vector<long long> stamp;
  std::vector<std::int32_t> slot;
  std::vector<std::int32_t> columns;
};

// The sorted distinct block columns of block row `br`, left in scratch.columns.
void collect_block_columns(const CsrMatrix& a, const IndexMapping& rows, const ColumnLayouts& cols,
                           int block_rows, int block_cols, long long br, BlockRowScratch& s) {
  s.columns.clear();
  for (int lr = 0; lr < block_rows; ++lr) {
    const long long slot = br * block_rows + lr;
    if (slot >= rows.mapped_size()) break;
    const std::int32_t original = rows.to_original[static_cast<std::size_t>(slot)];
    if (original < 0) continue;
    const int layout = cols.layout_of_ray(original);
    const std::int32_t* to_mapped = cols.layouts[static_cast<std::size_t>(layout)].to_mapped.data();
    const long long offset = cols.offset[static_cast<std::size_t>(layout)];
    for (long long k = a.row_ptr[static_cast<std::size_t>(original)];
         k < a.row_ptr[static_cast<std::size_t>(original) + 1]; ++k) {
      const std::int32_t bc = static_cast<std::int32_t>(
          (offset + to_mapped[a.col[static_cast<std::size_t>(k)]]) / block_cols);
      if (s.stamp[static_cast<std::size_t>(bc)] != br) {
        s.stamp[static_cast<std::size_t>(bc)] = br;
        s.columns.push_back(bc);
      }
    }
  }
  std::sort(s.columns.begin(), s.columns.end());
}

}  // namespace

BlockCount count_blocks(const CsrMatrix& a, const IndexMapping& rows, const ColumnLayouts& cols,
                        int block_rows, int block_cols, int threads) {
  check_sizes(a, rows, cols);
  const long long block_row_count = round_up(rows.mapped_size(), block_rows) / block_rows;
  const long long block_col_count = round_up(cols.mapped_size, block_cols) / block_cols;
  std::vector<BlockRowScratch> scratch(static_cast<std::size_t>(worker_count(threads)));
  std::vector<long long> per_worker(scratch.size(), 0);
  parallel_for(
      block_row_count,
      [&](long long br, int worker) {
        BlockRowScratch& s = scratch[static_cast<std::size_t>(worker)];
        if (s.stamp.empty()) s.stamp.assign(static_cast<std::size_t>(block_col_count), -1);
        collect_block_columns(a, rows, cols, block_rows, block_cols, br, s);
        per_worker[static_cast<std::size_t>(worker)] += static_cast<long long>(s.columns.size());
      },
      threads);
  BlockCount count;
  count.possible = block_row_count * block_col_count;
  for (long long n : per_worker)
    count.nonempty += n;
  return count;
}

BsrMatrixHalf build_bsr(const CsrMatrix& a, const IndexMapping& rows, const ColumnLayouts& cols,
                        WmmaShape shape, float value_scale, int threads) {
  check_sizes(a, rows, cols);
  if (!(value_scale > 0)) throw std::invalid_argument("BSR: value_scale must be positive");
  BsrMatrixHalf m;
  m.block_rows = dims(shape).m;
  m.block_cols = dims(shape).k;
  m.value_scale = value_scale;
  m.rows = round_up(rows.mapped_size(), m.block_rows);
  m.cols = round_up(cols.mapped_size, m.block_cols);
  const long long n_br = m.block_row_count();
  const long long n_bc = m.block_col_count();
  if (n_bc > 0x7fffffffLL) throw std::invalid_argument("BSR: too many block columns");

  std::vector<BlockRowScratch> scratch(static_cast<std::size_t>(worker_count(threads)));
  auto scratch_for = [&](int worker) -> BlockRowScratch& {
    BlockRowScratch& s = scratch[static_cast<std::size_t>(worker)];
    if (s.stamp.empty()) {
      s.stamp.assign(static_cast<std::size_t>(n_bc), -1);
      s.slot.assign(static_cast<std::size_t>(n_bc), -1);
    }
    return s;
  };

  std::vector<long long> counts(static_cast<std::size_t>(n_br), 0);
  parallel_for(
      n_br,
      [&](long long br, int worker) {
        BlockRowScratch& s = scratch_for(worker);
        collect_block_columns(a, rows, cols, m.block_rows, m.block_cols, br, s);
        counts[static_cast<std::size_t>(br)] = static_cast<long long>(s.columns.size());
      },
      threads);
  m.row_ptr.assign(static_cast<std::size_t>(n_br) + 1, 0);
  long long total = 0;
  for (long long br = 0; br < n_br; ++br) {
    total += counts[static_cast<std::size_t>(br)];
    if (total > 0x7fffffffLL) throw std::invalid_argument("BSR: more than 2^31 blocks");
    m.row_ptr[static_cast<std::size_t>(br) + 1] = static_cast<std::int32_t>(total);
  }
  m.col_index.resize(static_cast<std::size_t>(total));
  m.blocks.assign(static_cast<std::size_t>(total * m.block_elements()), 0);

  for (BlockRowScratch& s : scratch)
    std::fill(s.stamp.begin(), s.stamp.end(), -1);
  parallel_for(
      n_br,
      [&](long long br, int worker) {
        BlockRowScratch& s = scratch_for(worker);
        collect_block_columns(a, rows, cols, m.block_rows, m.block_cols, br, s);
        const std::int32_t first = m.row_ptr[static_cast<std::size_t>(br)];
        for (std::size_t i = 0; i < s.columns.size(); ++i) {
          m.col_index[static_cast<std::size_t>(first) + i] = s.columns[i];
          s.slot[static_cast<std::size_t>(s.columns[i])] = static_cast<std::int32_t>(i);
        }
        for (int lr = 0; lr < m.block_rows; ++lr) {
          const long long slot = br * m.block_rows + lr;
          if (slot >= rows.mapped_size()) break;
          const std::int32_t original = rows.to_original[static_cast<std::size_t>(slot)];
          if (original < 0) continue;
          const int layout = cols.layout_of_ray(original);
          const std::int32_t* to_mapped =
              cols.layouts[static_cast<std::size_t>(layout)].to_mapped.data();
          const long long offset = cols.offset[static_cast<std::size_t>(layout)];
          for (long long k = a.row_ptr[static_cast<std::size_t>(original)];
               k < a.row_ptr[static_cast<std::size_t>(original) + 1]; ++k) {
            const std::int32_t mc =
                static_cast<std::int32_t>(offset + to_mapped[a.col[static_cast<std::size_t>(k)]]);
            const std::int32_t bc = mc / m.block_cols;
            const long long block = first + s.slot[static_cast<std::size_t>(bc)];
            const long long element = block * m.block_elements() +
                                      static_cast<long long>(lr) * m.block_cols + mc % m.block_cols;
            m.blocks[static_cast<std::size_t>(element)] =
                float_to_half_bits(a.values[static_cast<std::size_t>(k)] / value_scale);
          }
        }
      },
      threads);

  // Column index: a counting sort of the blocks by block column, block rows ascending.
  m.col_ptr.assign(static_cast<std::size_t>(n_bc) + 1, 0);
  for (std::int32_t bc : m.col_index)
    ++m.col_ptr[static_cast<std::size_t>(bc) + 1];
  for (long long bc = 0; bc < n_bc; ++bc) {
    m.col_ptr[static_cast<std::size_t>(bc) + 1] += m.col_ptr[static_cast<std::size_t>(bc)];
  }
  m.col_blocks.resize(static_cast<std::size_t>(total));
  m.col_block_rows.resize(static_cast<std::size_t>(total));
  std::vector<std::int32_t> next(m.col_ptr.begin(), m.col_ptr.end() - 1);
  for (long long br = 0; br < n_br; ++br) {
    for (std::int32_t b = m.row_ptr[static_cast<std::size_t>(br)];
         b < m.row_ptr[static_cast<std::size_t>(br) + 1]; ++b) {
      const std::int32_t pos =
          next[static_cast<std::size_t>(m.col_index[static_cast<std::size_t>(b)])]++;
      m.col_blocks[static_cast<std::size_t>(pos)] = b;
      m.col_block_rows[static_cast<std::size_t>(pos)] = static_cast<std::int32_t>(br);
    }
  }
  return m;
}

namespace {

// The block products of one output tile (a block row forward, a block column transposed), in the
// kernels' order: blocks in storage order (forward) or column-index order (transposed). A block
// is seen in its orientation: out_count outputs x in_count inputs, weight(o, i); the inputs run
// in k-steps of at most 16 (a 32-row block transposed takes two; an 8-row one a single step, the
// kernels' 8 zero rays of padding adding nothing).
struct OrientedBlocks {
  const BsrMatrixHalf& bsr;
  bool transposed;
  int out_count() const { return transposed ? bsr.block_cols : bsr.block_rows; }
  int in_count() const { return transposed ? bsr.block_rows : bsr.block_cols; }
  long long tiles() const { return transposed ? bsr.block_col_count() : bsr.block_row_count(); }
  // Calls visit(weight, in_tile) for every block of tile t, weight(o, i) the fp16 weight.
  template <class Visit>
  void for_each_block(long long t, const Visit& visit) const {
    const std::vector<std::int32_t>& ptr = transposed ? bsr.col_ptr : bsr.row_ptr;
    for (std::int32_t e = ptr[static_cast<std::size_t>(t)];
         e < ptr[static_cast<std::size_t>(t) + 1]; ++e) {
      const std::int32_t b = transposed ? bsr.col_blocks[static_cast<std::size_t>(e)] : e;
      const long long in_tile = transposed ? bsr.col_block_rows[static_cast<std::size_t>(e)]
                                           : bsr.col_index[static_cast<std::size_t>(e)];
      const std::uint16_t* block =
          bsr.blocks.data() + static_cast<long long>(b) * bsr.block_elements();
      const int cols = bsr.block_cols;
      const bool t_ = transposed;
      visit(
          [block, cols, t_](int o, int i) {
            return half_bits_to_float(t_ ? block[i * cols + o] : block[o * cols + i]);
          },
          in_tile);
    }
  }
};

// The tensor core model (mma_accumulation.hpp) for one output tile: chain[] holds the running
// accumulators, sum[] the fp32 sums they are added to at the end of each chain.
struct EmulatedTile {
  std::vector<float> chain, sum;
  int blocks_in_chain = 0;

  explicit EmulatedTile(std::size_t outputs) : chain(outputs, 0.0f), sum(outputs, 0.0f) {}
  // Before each block: a new chain every `chain_blocks` blocks (the kernels' fresh fragment).
  void begin_block(const MmaAccumulation& model) {
    if (model.chain_blocks > 0 && blocks_in_chain == model.chain_blocks) flush();
    ++blocks_in_chain;
  }
  void flush() {
    for (std::size_t i = 0; i < chain.size(); ++i) {
      sum[i] += chain[i];  // fp32, round to nearest
      chain[i] = 0.0f;
    }
    blocks_in_chain = 0;
  }
};

void check_model(const MmaAccumulation& model) {
  if (model.emulate && (model.step_products <= 0 || model.extra_bits < 0 || model.extra_bits > 20 ||
                        model.chain_blocks < 0)) {
    throw std::invalid_argument("BSR: invalid tensor core accumulation model");
  }
}

// out (tiles x out_count rows) = the oriented blocks times in (in_count rows per in_tile).
void multiply_blocks(const OrientedBlocks& blocks, const float* in, float* out, int columns,
                     const MmaAccumulation& model) {
  check_model(model);
  const int out_count = blocks.out_count();
  const int in_count = blocks.in_count();
  const int step_inputs = std::min(in_count, 16);
  const std::size_t c_count = static_cast<std::size_t>(columns);
  const std::size_t outputs = static_cast<std::size_t>(out_count) * c_count;
  const float value_scale = blocks.bsr.value_scale;
  parallel_for(blocks.tiles(), [&](long long t, int) {
    float* out_tile = out + static_cast<std::size_t>(t) * outputs;
    if (!model.emulate) {  // exact: products and sums in double
      std::vector<double> acc(outputs, 0.0);
      blocks.for_each_block(t, [&](const auto& weight, long long in_tile) {
        const float* in_block = in + static_cast<std::size_t>(in_tile) * in_count * c_count;
        for (int o = 0; o < out_count; ++o) {
          for (int i = 0; i < in_count; ++i) {
            const double w = weight(o, i);
            if (w == 0) continue;
            for (std::size_t c = 0; c < c_count; ++c)
              acc[o * c_count + c] += w * in_block[i * c_count + c];
          }
        }
      });
      for (std::size_t i = 0; i < outputs; ++i)
        out_tile[i] = static_cast<float>(acc[i] * value_scale);
      return;
    }
    EmulatedTile tile(outputs);
    std::vector<double> products(static_cast<std::size_t>(step_inputs));
    const int keep_bits = 24 + model.extra_bits;
    blocks.for_each_block(t, [&](const auto& weight, long long in_tile) {
      tile.begin_block(model);
      const float* in_block = in + static_cast<std::size_t>(in_tile) * in_count * c_count;
      for (int first = 0; first < in_count; first += step_inputs) {  // the kernels' k-steps
        for (int o = 0; o < out_count; ++o) {
          for (std::size_t c = 0; c < c_count; ++c) {
            for (int i = 0; i < step_inputs; ++i) {
              products[static_cast<std::size_t>(i)] =
                  static_cast<double>(weight(o, first + i)) *
                  static_cast<double>(in_block[(first + i) * c_count + c]);
            }
            float& acc = tile.chain[o * c_count + c];
            for (int f = 0; f < step_inputs; f += model.step_products) {  // the model's steps
              acc = mma_model::step(acc, products.data() + f,
                                    std::min(model.step_products, step_inputs - f), keep_bits);
            }
          }
        }
      }
    });
    tile.flush();
    for (std::size_t i = 0; i < outputs; ++i)
      out_tile[i] = static_cast<float>(static_cast<double>(tile.sum[i]) * value_scale);
  });
}

}  // namespace

void bsr_multiply_cpu(const BsrMatrixHalf& bsr, const float* x, float* y, int columns,
                      const MmaAccumulation& accumulation) {
  multiply_blocks(OrientedBlocks{bsr, false}, x, y, columns, accumulation);
}

void bsr_multiply_transposed_cpu(const BsrMatrixHalf& bsr, const float* y, float* x, int columns,
                                 const MmaAccumulation& accumulation) {
  multiply_blocks(OrientedBlocks{bsr, true}, y, x, columns, accumulation);
}

}  // namespace slicestream::tensorcore
