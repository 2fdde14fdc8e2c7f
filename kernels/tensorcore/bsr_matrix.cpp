#include "kernels/tensorcore/bsr_matrix.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/half_float.hpp"

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

// Per-participant scratch: a stamp per block column (which block row last saw it) and its slot.
struct BlockRowScratch {
  std::vector<long long> stamp;
  std::vector<std::int32_t> slot;
  std::vector<std::int32_t> columns;
};

// Calls visit(lr, mapped_column, k) for every non-zero k of the CSR matrix in row lr of block
// row `br` (mapped_column: the entry's column in the ray's column layout).
template <class Visit>
void for_each_entry(const CsrMatrix& a, const IndexMapping& rows, const ColumnLayouts& cols,
                    int block_rows, long long br, const Visit& visit) {
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
      visit(lr, static_cast<std::int32_t>(offset + to_mapped[a.col[static_cast<std::size_t>(k)]]),
            k);
    }
  }
}

// The sorted distinct block columns of block row `br`, left in scratch.columns.
void collect_block_columns(const CsrMatrix& a, const IndexMapping& rows, const ColumnLayouts& cols,
                           int block_rows, int block_cols, long long br, BlockRowScratch& s) {
  s.columns.clear();
  for_each_entry(a, rows, cols, block_rows, br, [&](int, std::int32_t mapped_column, long long) {
    const std::int32_t bc = mapped_column / block_cols;
    if (s.stamp[static_cast<std::size_t>(bc)] != br) {
      s.stamp[static_cast<std::size_t>(bc)] = br;
      s.columns.push_back(bc);
    }
  });
  std::sort(s.columns.begin(), s.columns.end());
}

// Block rows per chunk of the builders' loops.
constexpr std::size_t kBlockRowGrain = 8;

// The participant's scratch, sized on first use (stamps -1: no block row seen yet).
BlockRowScratch& scratch_for(std::vector<BlockRowScratch>& scratch, int participant,
                             long long block_col_count) {
  BlockRowScratch& s = scratch[static_cast<std::size_t>(participant)];
  if (s.stamp.empty()) {
    s.stamp.assign(static_cast<std::size_t>(block_col_count), -1);
    s.slot.assign(static_cast<std::size_t>(block_col_count), -1);
  }
  return s;
}

// Writes the blocks of block row `br` (its block columns found again in s.columns).
void fill_block_row(const CsrMatrix& a, const IndexMapping& rows, const ColumnLayouts& cols,
                    long long br, BlockRowScratch& s, BsrMatrixHalf& m) {
  collect_block_columns(a, rows, cols, m.block_rows, m.block_cols, br, s);
  const std::int32_t first = m.row_ptr[static_cast<std::size_t>(br)];
  for (std::size_t i = 0; i < s.columns.size(); ++i) {
    m.col_index[static_cast<std::size_t>(first) + i] = s.columns[i];
    s.slot[static_cast<std::size_t>(s.columns[i])] = static_cast<std::int32_t>(i);
  }
  for_each_entry(a, rows, cols, m.block_rows, br, [&](int lr, std::int32_t mc, long long k) {
    const long long block = first + s.slot[static_cast<std::size_t>(mc / m.block_cols)];
    const long long element =
        block * m.block_elements() + static_cast<long long>(lr) * m.block_cols + mc % m.block_cols;
    m.blocks[static_cast<std::size_t>(element)] =
        float_to_half(a.values[static_cast<std::size_t>(k)] / m.value_scale);
  });
}

// Column index: a counting sort of the blocks by block column, block rows ascending.
void build_column_index(BsrMatrixHalf& m) {
  const long long n_br = m.block_row_count();
  const long long n_bc = m.block_col_count();
  const std::size_t total = m.col_index.size();
  m.col_ptr.assign(static_cast<std::size_t>(n_bc) + 1, 0);
  for (std::int32_t bc : m.col_index)
    ++m.col_ptr[static_cast<std::size_t>(bc) + 1];
  for (long long bc = 0; bc < n_bc; ++bc) {
    m.col_ptr[static_cast<std::size_t>(bc) + 1] += m.col_ptr[static_cast<std::size_t>(bc)];
  }
  m.col_blocks.resize(total);
  m.col_block_rows.resize(total);
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
}

}  // namespace

std::vector<std::int32_t> blocks_per_block_row(Executor& executor, const CsrMatrix& a,
                                               const IndexMapping& rows, const ColumnLayouts& cols,
                                               int block_rows, int block_cols) {
  check_sizes(a, rows, cols);
  const long long block_row_count = round_up(rows.mapped_size(), block_rows) / block_rows;
  const long long block_col_count = round_up(cols.mapped_size, block_cols) / block_cols;
  if (block_col_count > 0x7fffffffLL) throw std::invalid_argument("BSR: too many block columns");
  std::vector<std::int32_t> counts(static_cast<std::size_t>(block_row_count), 0);
  std::vector<BlockRowScratch> scratch(static_cast<std::size_t>(executor.max_participants()));
  executor.parallel_for(static_cast<std::size_t>(block_row_count), kBlockRowGrain,
                        [&](std::size_t begin, std::size_t end, int participant) {
                          BlockRowScratch& s = scratch_for(scratch, participant, block_col_count);
                          for (std::size_t br = begin; br < end; ++br) {
                            collect_block_columns(a, rows, cols, block_rows, block_cols,
                                                  static_cast<long long>(br), s);
                            counts[br] = static_cast<std::int32_t>(s.columns.size());
                          }
                        });
  return counts;
}

BsrMatrixHalf build_bsr(Executor& executor, const CsrMatrix& a, const IndexMapping& rows,
                        const ColumnLayouts& cols, WmmaShape shape, float value_scale) {
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

  const std::vector<std::int32_t> counts =
      blocks_per_block_row(executor, a, rows, cols, m.block_rows, m.block_cols);
  m.row_ptr.assign(static_cast<std::size_t>(n_br) + 1, 0);
  long long total = 0;
  for (long long br = 0; br < n_br; ++br) {
    total += counts[static_cast<std::size_t>(br)];
    if (total > 0x7fffffffLL) throw std::invalid_argument("BSR: more than 2^31 blocks");
    m.row_ptr[static_cast<std::size_t>(br) + 1] = static_cast<std::int32_t>(total);
  }
  m.col_index.resize(static_cast<std::size_t>(total));
  m.blocks.assign(static_cast<std::size_t>(total * m.block_elements()), 0);

  std::vector<BlockRowScratch> scratch(static_cast<std::size_t>(executor.max_participants()));
  executor.parallel_for(static_cast<std::size_t>(n_br), kBlockRowGrain,
                        [&](std::size_t begin, std::size_t end, int participant) {
                          BlockRowScratch& s = scratch_for(scratch, participant, n_bc);
                          for (std::size_t br = begin; br < end; ++br)
                            fill_block_row(a, rows, cols, static_cast<long long>(br), s, m);
                        });
  build_column_index(m);
  return m;
}

}  // namespace slicestream::tensorcore
