#include "kernels/tensorcore/sparse_matrix.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/tensorcore/distance_driven.hpp"

namespace slicestream::tensorcore {

namespace {

struct Entry {
  std::int32_t col;
  double value;
};

// The rows of one projection, in the final CSR order (columns sorted, duplicates merged).
struct ProjectionRows {
  std::vector<long long> counts;  // per bin
  std::vector<std::int32_t> col;
  std::vector<float> values;
};

ProjectionRows build_projection(const Geometry2d& geometry, const ImageGrid2d& grid, int projection,
                                const std::vector<float>* factors) {
  const int bins = geometry.bins;
  std::vector<std::vector<Entry>> rows(static_cast<std::size_t>(bins));
  DistanceDrivenProjection(geometry, grid, projection)
      .enumerate([&](int bin, long long pixel, double w) {
        double factor = 1;
        if (factors != nullptr) {
          factor = (*factors)[static_cast<std::size_t>(pixel)];
          if (factor == 0) return;
        }
        rows[static_cast<std::size_t>(bin)].push_back(
            {static_cast<std::int32_t>(pixel), w * factor});
      });
  ProjectionRows out;
  out.counts.assign(static_cast<std::size_t>(bins), 0);
  for (int b = 0; b < bins; ++b) {
    std::vector<Entry>& row = rows[static_cast<std::size_t>(b)];
    std::sort(row.begin(), row.end(), [](const Entry& l, const Entry& r) { return l.col < r.col; });
    std::size_t kept = 0;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (kept > 0 && row[kept - 1].col == row[i].col) {
        row[kept - 1].value += row[i].value;  // both driving axes at 45 degrees
      } else {
        row[kept++] = row[i];
      }
    }
    for (std::size_t i = 0; i < kept; ++i) {
      if (row[i].value == 0) continue;
      out.col.push_back(row[i].col);
      out.values.push_back(static_cast<float>(row[i].value));
      ++out.counts[static_cast<std::size_t>(b)];
    }
    std::vector<Entry>().swap(row);
  }
  return out;
}

}  // namespace

CsrMatrix build_dd_matrix(Executor& executor, const Geometry2d& geometry, const ImageGrid2d& grid,
                          const DdMatrixOptions& options) {
  std::string problem = validate_geometry_2d(geometry);
  if (problem.empty()) problem = validate_grid_2d(grid);
  if (problem.empty() && grid.pixels() > 0x7fffffffLL) problem = "image has more than 2^31 pixels";
  if (problem.empty() && options.column_factors != nullptr &&
      static_cast<long long>(options.column_factors->size()) != grid.pixels()) {
    problem = "column_factors must hold one factor per pixel";
  }
  if (!problem.empty()) throw std::invalid_argument("build_dd_matrix: " + problem);

  const int angles = geometry.angles();
  std::vector<ProjectionRows> parts(static_cast<std::size_t>(angles));
  executor.parallel_for(
      static_cast<std::size_t>(angles), 1, [&](std::size_t begin, std::size_t end, int) {
        for (std::size_t a = begin; a < end; ++a) {
          parts[a] = build_projection(geometry, grid, static_cast<int>(a), options.column_factors);
        }
      });

  CsrMatrix m;
  m.rows = geometry.rays();
  m.cols = grid.pixels();
  m.row_ptr.assign(static_cast<std::size_t>(m.rows) + 1, 0);
  std::vector<long long> part_offset(static_cast<std::size_t>(angles) + 1, 0);
  for (int a = 0; a < angles; ++a) {
    const ProjectionRows& part = parts[static_cast<std::size_t>(a)];
    for (int b = 0; b < geometry.bins; ++b) {
      const std::size_t row = static_cast<std::size_t>(a) * geometry.bins + b;
      m.row_ptr[row + 1] = m.row_ptr[row] + part.counts[static_cast<std::size_t>(b)];
    }
    part_offset[static_cast<std::size_t>(a) + 1] =
        part_offset[static_cast<std::size_t>(a)] + static_cast<long long>(part.col.size());
  }
  const long long nnz = part_offset.back();
  if (nnz > 0x7fffffffLL) throw std::invalid_argument("build_dd_matrix: more than 2^31 non-zeros");
  m.col.resize(static_cast<std::size_t>(nnz));
  m.values.resize(static_cast<std::size_t>(nnz));
  executor.parallel_for(
      static_cast<std::size_t>(angles), 1, [&](std::size_t begin, std::size_t end, int) {
        for (std::size_t a = begin; a < end; ++a) {
          ProjectionRows& part = parts[a];
          std::copy(part.col.begin(), part.col.end(), m.col.begin() + part_offset[a]);
          std::copy(part.values.begin(), part.values.end(), m.values.begin() + part_offset[a]);
          std::vector<long long>().swap(part.counts);
          std::vector<std::int32_t>().swap(part.col);
          std::vector<float>().swap(part.values);
        }
      });
  return m;
}

namespace {

// Rows per chunk of the products' loops: keeps the scheduling overhead small.
constexpr std::size_t kRowGrain = 256;

// y[r] = A[r, :] x for the rows [begin, end), summed in double.
void multiply_rows(const CsrMatrix& a, const float* x, float* y, int columns, std::size_t begin,
                   std::size_t end) {
  std::vector<double> acc(static_cast<std::size_t>(columns));
  for (std::size_t r = begin; r < end; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (long long k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const double w = a.values[static_cast<std::size_t>(k)];
      const float* xr = x + static_cast<long long>(a.col[static_cast<std::size_t>(k)]) * columns;
      for (int c = 0; c < columns; ++c)
        acc[static_cast<std::size_t>(c)] += w * xr[c];
    }
    float* yr = y + static_cast<long long>(r) * columns;
    for (int c = 0; c < columns; ++c)
      yr[c] = static_cast<float>(acc[static_cast<std::size_t>(c)]);
  }
}

// acc += A[begin:end, :]^T y[begin:end] (acc: cols x columns, double).
void accumulate_transposed_rows(const CsrMatrix& a, const float* y, int columns, std::size_t begin,
                                std::size_t end, std::vector<double>& acc) {
  for (std::size_t r = begin; r < end; ++r) {
    const float* yr = y + static_cast<long long>(r) * columns;
    for (long long k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const double w = a.values[static_cast<std::size_t>(k)];
      double* xr = acc.data() + static_cast<std::size_t>(a.col[static_cast<std::size_t>(k)]) *
                                    static_cast<std::size_t>(columns);
      for (int c = 0; c < columns; ++c)
        xr[c] += w * yr[c];
    }
  }
}

}  // namespace

void csr_multiply(Executor& executor, const CsrMatrix& a, const float* x, float* y, int columns) {
  executor.parallel_for(static_cast<std::size_t>(a.rows), kRowGrain,
                        [&](std::size_t begin, std::size_t end, int) {
                          multiply_rows(a, x, y, columns, begin, end);
                        });
}

// Every participant sums into its own image; the partial images are added at the end.
void csr_multiply_transposed(Executor& executor, const CsrMatrix& a, const float* y, float* x,
                             int columns) {
  const std::size_t size = static_cast<std::size_t>(a.cols) * static_cast<std::size_t>(columns);
  std::vector<std::vector<double>> partial(static_cast<std::size_t>(executor.max_participants()));
  executor.parallel_for(static_cast<std::size_t>(a.rows), kRowGrain,
                        [&](std::size_t begin, std::size_t end, int participant) {
                          std::vector<double>& acc = partial[static_cast<std::size_t>(participant)];
                          if (acc.empty()) acc.assign(size, 0.0);
                          accumulate_transposed_rows(a, y, columns, begin, end, acc);
                        });
  for (std::size_t i = 0; i < size; ++i) {
    double sum = 0;
    for (const std::vector<double>& acc : partial) {
      if (!acc.empty()) sum += acc[i];
    }
    x[i] = static_cast<float>(sum);
  }
}

CsrMatrix transpose(const CsrMatrix& a) {
  if (a.cols > 0x7fffffffLL || a.rows > 0x7fffffffLL) {
    throw std::invalid_argument("transpose: more than 2^31 rows or columns");
  }
  CsrMatrix t;
  t.rows = a.cols;
  t.cols = a.rows;
  t.row_ptr.assign(static_cast<std::size_t>(t.rows) + 1, 0);
  for (std::int32_t c : a.col)
    ++t.row_ptr[static_cast<std::size_t>(c) + 1];
  for (long long r = 0; r < t.rows; ++r)
    t.row_ptr[static_cast<std::size_t>(r) + 1] += t.row_ptr[static_cast<std::size_t>(r)];
  t.col.resize(a.col.size());
  t.values.resize(a.values.size());
  // Rows of `a` in ascending order: every row of the transpose receives its columns sorted.
  std::vector<long long> next(t.row_ptr.begin(), t.row_ptr.end() - 1);
  for (long long r = 0; r < a.rows; ++r) {
    for (long long i = a.row_ptr[static_cast<std::size_t>(r)];
         i < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++i) {
      const long long slot = next[static_cast<std::size_t>(a.col[static_cast<std::size_t>(i)])]++;
      t.col[static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(r);
      t.values[static_cast<std::size_t>(slot)] = a.values[static_cast<std::size_t>(i)];
    }
  }
  return t;
}

}  // namespace slicestream::tensorcore
