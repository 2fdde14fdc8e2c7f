// Voxel-driven backprojection on the CPU, the hot path of the CPU backend.
//
// Along one row of the grid the point is P(i) = P0 + i dx, so the column and row numerators and
// the denominator of the ProjectionMap are linear in i: col = C(i) / D(i), row = R(i) / D(i), and
// D = 1 in parallel beam. Every inequality "the sample lies in the detector" becomes a linear
// inequality in i, so the row splits into intervals computed up front:
//   - the interior, where all four bilinear taps are inside: a branch-free loop that GCC
//     vectorises (gathers), parallel and cone specialised;
//   - the border, where some taps fall outside or den <= 0: a scalar loop with explicit checks;
//   - the rest, which contributes nothing and is skipped.
// The grid row accumulates over all projections in a small buffer that stays in L1, then is added
// to the target once.
#include "kernels/cpu/backproject_cpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace slicestream::cpu {
namespace {

// A half-open range of grid columns [begin, end).
struct ColumnRange {
  int begin;
  int end;
  bool empty() const { return begin >= end; }
};

// Real i satisfying every constraint alpha + beta * i >= 0 added so far.
class LinearConstraints {
 public:
  void require_non_negative(double alpha, double beta) {
    if (beta == 0.0) {
      if (!(alpha >= 0.0)) empty_ = true;
    } else if (beta > 0.0) {
      lo_ = std::max(lo_, -alpha / beta);
    } else {
      hi_ = std::min(hi_, -alpha / beta);
    }
  }

  // Integer columns in [0, width) whose i lies within [lo - grow, hi + grow] (grow may be
  // negative to shrink), clamped before converting so that huge bounds cannot overflow.
  ColumnRange columns(int width, double grow) const {
    if (empty_ || !(lo_ <= hi_)) return {0, 0};
    const double lo = std::clamp(std::ceil(lo_ - grow), 0.0, static_cast<double>(width));
    const double hi = std::clamp(std::floor(hi_ + grow) + 1.0, 0.0, static_cast<double>(width));
    return {static_cast<int>(lo), static_cast<int>(hi)};
  }

 private:
  double lo_ = -std::numeric_limits<double>::infinity();
  double hi_ = std::numeric_limits<double>::infinity();
  bool empty_ = false;
};

// col(i) = (col0 + i col1) / (den0 + i den1), likewise row; den = 1 in parallel beam.
struct RowLine {
  double col0, col1;
  double row0, row1;
  double den0, den1;
};

double affine(const float* coef, const double* point) {
  return static_cast<double>(coef[0]) * point[0] + static_cast<double>(coef[1]) * point[1] +
         static_cast<double>(coef[2]) * point[2] + static_cast<double>(coef[3]) * point[3];
}

RowLine row_line(const ProjectionMap& map, const double* start, const double* step) {
  return {affine(map.col_coef, start), affine(map.col_coef, step),  affine(map.row_coef, start),
          affine(map.row_coef, step),  affine(map.den_coef, start), affine(map.den_coef, step)};
}

bool is_parallel(const ProjectionMap& map) {
  return map.den_coef[0] == 0.0f && map.den_coef[1] == 0.0f && map.den_coef[2] == 0.0f &&
         map.den_coef[3] == 1.0f;
}

// Margin (pixels) that keeps interior samples safely inside despite float rounding; the index
// clamps in the interior loops make memory safety independent of it.
constexpr double kInteriorMargin = 1.0 / 64.0;
// Interior points need a clearly positive magnification; smaller ones go to the checked loop.
constexpr double kMinInteriorDen = 1e-3;

// Where all four taps are inside: col in [m, cols - 1 - m], row likewise, den > 0.
ColumnRange interior_columns(const RowLine& line, DetectorShape detector, int width) {
  const double m = kInteriorMargin;
  LinearConstraints c;
  c.require_non_negative(line.den0 - kMinInteriorDen, line.den1);
  c.require_non_negative(line.col0 - m * line.den0, line.col1 - m * line.den1);
  const double last_col = detector.cols - 1 - m;
  c.require_non_negative(last_col * line.den0 - line.col0, last_col * line.den1 - line.col1);
  c.require_non_negative(line.row0 - m * line.den0, line.row1 - m * line.den1);
  const double last_row = detector.rows - 1 - m;
  c.require_non_negative(last_row * line.den0 - line.row0, last_row * line.den1 - line.row1);
  return c.columns(width, -1.0);  // one column of safety on each side
}

// Where any tap may be inside: col in (-1, cols), row in (-1, rows), den > 0, grown by one
// column and half a pixel so that rounding can only add columns (they contribute 0).
ColumnRange support_columns(const RowLine& line, DetectorShape detector, int width) {
  LinearConstraints c;
  c.require_non_negative(line.den0, line.den1);
  c.require_non_negative(line.col0 + 1.5 * line.den0, line.col1 + 1.5 * line.den1);
  const double past_col = detector.cols + 0.5;
  c.require_non_negative(past_col * line.den0 - line.col0, past_col * line.den1 - line.col1);
  c.require_non_negative(line.row0 + 1.5 * line.den0, line.row1 + 1.5 * line.den1);
  const double past_row = detector.rows + 0.5;
  c.require_non_negative(past_row * line.den0 - line.row0, past_row * line.den1 - line.row1);
  return c.columns(width, 1.0);
}

// Bilinear sample with a zero border (like a texture), any (col, row).
float sample_zero_border(const float* data, DetectorShape detector, float col, float row) {
  const float col_floor = std::floor(col);
  const float row_floor = std::floor(row);
  const float fc = col - col_floor;
  const float fr = row - row_floor;
  // Far-away samples would overflow an int; they read nothing anyway.
  if (!(col_floor >= -1.0f && col_floor < static_cast<float>(detector.cols) && row_floor >= -1.0f &&
        row_floor < static_cast<float>(detector.rows))) {
    return 0.0f;
  }
  const int c0 = static_cast<int>(col_floor);
  const int r0 = static_cast<int>(row_floor);
  auto tap = [&](int r, int c) {
    if (r < 0 || r >= detector.rows || c < 0 || c >= detector.cols) return 0.0f;
    return data[static_cast<std::size_t>(r) * static_cast<std::size_t>(detector.cols) +
                static_cast<std::size_t>(c)];
  };
  const float top = (1.0f - fc) * tap(r0, c0) + fc * tap(r0, c0 + 1);
  const float bottom = (1.0f - fc) * tap(r0 + 1, c0) + fc * tap(r0 + 1, c0 + 1);
  return (1.0f - fr) * top + fr * bottom;
}

// The checked loop (border columns): den <= 0 contributes nothing.
void accumulate_border(const RowLine& line, const float* data, DetectorShape detector, float weight,
                       ColumnRange range, float* acc) {
  for (int i = range.begin; i < range.end; ++i) {
    const double den = line.den0 + i * line.den1;
    if (!(den > 0.0)) continue;
    const float col = static_cast<float>((line.col0 + i * line.col1) / den);
    const float row = static_cast<float>((line.row0 + i * line.row1) / den);
    const float inv_den = static_cast<float>(1.0 / den);
    acc[i] += weight * inv_den * inv_den * sample_zero_border(data, detector, col, row);
  }
}

// Interior loops: no bounds checks, no branches. Indices are 32-bit (the detector size is limited
// accordingly) so that the gathers use 32-bit lanes; the clamps only guard against rounding.
// `data` and `acc` never overlap (acc is the row buffer of backproject_rows); saying so lets GCC
// use gathers without run-time overlap checks it cannot do for gathers. Each loop spells out its
// bilinear interpolation: moved into a shared inline function, GCC 12 no longer vectorises either
// loop (the restrict qualifiers do not carry into the inlined loads).
void accumulate_interior_parallel(const RowLine& line, const float* __restrict data,
                                  DetectorShape detector, float weight, ColumnRange range,
                                  float* __restrict acc) {
  const float col0 = static_cast<float>(line.col0);
  const float col1 = static_cast<float>(line.col1);
  const float row0 = static_cast<float>(line.row0);
  const float row1 = static_cast<float>(line.row1);
  const int cols = detector.cols;
  const int last_col = detector.cols - 2;
  const int last_row = detector.rows - 2;
  for (int i = range.begin; i < range.end; ++i) {
    const float fi = static_cast<float>(i);
    const float col = col0 + fi * col1;
    const float row = row0 + fi * row1;
    const int c = std::min(std::max(static_cast<int>(col), 0), last_col);
    const int r = std::min(std::max(static_cast<int>(row), 0), last_row);
    const float fc = col - static_cast<float>(c);
    const float fr = row - static_cast<float>(r);
    const int top = r * cols + c;
    const int bottom = top + cols;
    const float upper = data[top] + fc * (data[top + 1] - data[top]);
    const float lower = data[bottom] + fc * (data[bottom + 1] - data[bottom]);
    acc[i] += weight * (upper + fr * (lower - upper));
  }
}

void accumulate_interior_cone(const RowLine& line, const float* __restrict data,
                              DetectorShape detector, float weight, ColumnRange range,
                              float* __restrict acc) {
  const float col0 = static_cast<float>(line.col0);
  const float col1 = static_cast<float>(line.col1);
  const float row0 = static_cast<float>(line.row0);
  const float row1 = static_cast<float>(line.row1);
  const float den0 = static_cast<float>(line.den0);
  const float den1 = static_cast<float>(line.den1);
  const int cols = detector.cols;
  const int last_col = detector.cols - 2;
  const int last_row = detector.rows - 2;
  for (int i = range.begin; i < range.end; ++i) {
    const float fi = static_cast<float>(i);
    const float inv_den = 1.0f / (den0 + fi * den1);
    const float col = (col0 + fi * col1) * inv_den;
    const float row = (row0 + fi * row1) * inv_den;
    const int c = std::min(std::max(static_cast<int>(col), 0), last_col);
    const int r = std::min(std::max(static_cast<int>(row), 0), last_row);
    const float fc = col - static_cast<float>(c);
    const float fr = row - static_cast<float>(r);
    const int top = r * cols + c;
    const int bottom = top + cols;
    const float upper = data[top] + fc * (data[top + 1] - data[top]);
    const float lower = data[bottom] + fc * (data[bottom + 1] - data[bottom]);
    acc[i] += weight * inv_den * inv_den * (upper + fr * (lower - upper));
  }
}

void accumulate_projection(const ProjectionRef& projection, DetectorShape detector,
                           const double* start, const double* step, int width, float* acc) {
  const ProjectionMap& map = projection.map;
  const RowLine line = row_line(map, start, step);
  const ColumnRange support = support_columns(line, detector, width);
  if (support.empty()) return;
  ColumnRange interior = interior_columns(line, detector, width);
  interior.begin = std::max(interior.begin, support.begin);
  interior.end = std::min(interior.end, support.end);
  if (interior.empty()) {
    accumulate_border(line, projection.data, detector, map.weight, support, acc);
    return;
  }
  accumulate_border(line, projection.data, detector, map.weight, {support.begin, interior.begin},
                    acc);
  if (is_parallel(map)) {
    accumulate_interior_parallel(line, projection.data, detector, map.weight, interior, acc);
  } else {
    accumulate_interior_cone(line, projection.data, detector, map.weight, interior, acc);
  }
  accumulate_border(line, projection.data, detector, map.weight, {interior.end, support.end}, acc);
}

// Geometry is validated where it enters, but a NaN here would make the interval arithmetic
// meaningless, so the kernel refuses it too (13 numbers per projection).
bool map_is_finite(const ProjectionMap& map) {
  for (int i = 0; i < 4; ++i) {
    if (!std::isfinite(map.col_coef[i]) || !std::isfinite(map.row_coef[i]) ||
        !std::isfinite(map.den_coef[i])) {
      return false;
    }
  }
  return std::isfinite(map.weight);
}

void check_arguments(const GridSpec& grid, DetectorShape detector, const ProjectionRef* projections,
                     int count, const float* target, int plane, int row_begin, int row_end) {
  if (grid.width <= 0 || grid.height <= 0 || grid.depth <= 0) {
    throw std::invalid_argument("backprojection grid has no points");
  }
  if (detector.rows <= 0 || detector.cols <= 0) {
    throw std::invalid_argument("backprojection detector has no pixels");
  }
  // 32-bit gather indices: row * cols + col + cols + 1 must fit in an int.
  if (detector.pixels() + static_cast<std::size_t>(detector.cols) + 2 >
      static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::invalid_argument("backprojection detector larger than 2^31 pixels");
  }
  if (plane < 0 || plane >= grid.depth) {
    throw std::invalid_argument("backprojection plane outside the grid");
  }
  if (row_begin < 0 || row_end > grid.height || row_begin > row_end) {
    throw std::invalid_argument("backprojection row range outside the grid");
  }
  if (count < 0 || (count > 0 && projections == nullptr) || target == nullptr) {
    throw std::invalid_argument("backprojection needs projections and a target");
  }
  for (int p = 0; p < count; ++p) {
    if (projections[p].data == nullptr) {
      throw std::invalid_argument("backprojection projection without data");
    }
    if (!map_is_finite(projections[p].map)) {
      throw std::invalid_argument("backprojection map " + std::to_string(p) +
                                  " has a non-finite coefficient");
    }
  }
}

}  // namespace

void backproject_rows(const GridSpec& grid, DetectorShape detector,
                      const ProjectionRef* projections, int count, float scale, float* target,
                      int plane, int row_begin, int row_end) {
  check_arguments(grid, detector, projections, count, target, plane, row_begin, row_end);
  if (count == 0 || row_begin == row_end) return;
  const int width = grid.width;
  const double x_step[3] = {static_cast<double>(grid.x_axis.x) / width,
                            static_cast<double>(grid.x_axis.y) / width,
                            static_cast<double>(grid.x_axis.z) / width};
  const double step[4] = {x_step[0], x_step[1], x_step[2], 0.0};  // no constant term per step
  const double plane_offset = (plane + 0.5) / grid.depth;
  std::vector<float> acc(static_cast<std::size_t>(width));
  for (int j = row_begin; j < row_end; ++j) {
    const double row_offset = (j + 0.5) / grid.height;
    // The centre of column 0 of this row, with the constant 1 of homogeneous coordinates.
    const double start[4] = {
        grid.base.x + 0.5 * x_step[0] + row_offset * grid.y_axis.x + plane_offset * grid.z_axis.x,
        grid.base.y + 0.5 * x_step[1] + row_offset * grid.y_axis.y + plane_offset * grid.z_axis.y,
        grid.base.z + 0.5 * x_step[2] + row_offset * grid.y_axis.z + plane_offset * grid.z_axis.z,
        1.0};
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int p = 0; p < count; ++p) {
      accumulate_projection(projections[p], detector, start, step, width, acc.data());
    }
    float* out = target + (static_cast<std::size_t>(plane) * grid.height + j) * width;
    for (int i = 0; i < width; ++i)
      out[i] += scale * acc[i];
  }
}

}  // namespace slicestream::cpu
