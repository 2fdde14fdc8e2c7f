// Host evaluation of expressions: plain loops that GCC vectorises (check with -fopt-info-vec; the
// bench and tests/kernels build this header), with counters and reductions fused into the same
// pass, so that guarding or reducing never re-reads the data (elsa thesis §6.2's "future work").
//
// Aliasing: each index reads only element `flat` of its arrays, and a tile of values is complete
// before it is written, so `out` may be one of the inputs (in-place updates such as
// r = r - alpha * q are fine).
//
// Compile users with -fno-math-errno -fno-trapping-math (kernels/cpu and tests/kernels do): with
// trapping math GCC will not evaluate both arms of a select (a conversion or division could
// raise a flag), and the loops stay scalar. IEEE results (NaN, infinities) are unaffected.
//
// The CUDA twins (evaluation and reduction kernels) live in kernels/cuda/.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <utility>

#include "kernels/expr/expression.hpp"
#include "kernels/expr/index.hpp"
#include "kernels/expr/pass.hpp"

namespace slicestream::expr {

// Counts of the conditions passed to an evaluation, in the order given.
template <std::size_t N>
using Counts = std::array<std::uint64_t, N>;

namespace detail {

template <class I, class Tuple, std::size_t... K>
inline void count_conditions(std::uint64_t* counts, const I& index, const Tuple& conditions,
                             std::index_sequence<K...>) {
  ((counts[K] += static_cast<std::uint64_t>(static_cast<bool>(std::get<K>(conditions).at(index)))),
   ...);
}

// Partial sums in independent lanes: float contributions are added in double, and the fixed
// lane pattern lets GCC vectorise the loop without reassociating (no -ffast-math needed).
// The result depends on the range only, never on the machine.
constexpr int kReductionLanes = 8;

template <class Contribution>
inline double lane_sum(std::size_t begin, std::size_t end, const Contribution& contribution) {
  double lanes[kReductionLanes] = {};
  std::size_t i = begin;
  for (; i + kReductionLanes <= end; i += kReductionLanes) {
    for (int lane = 0; lane < kReductionLanes; ++lane) {
      lanes[lane] += static_cast<double>(contribution(i + static_cast<std::size_t>(lane)));
    }
  }
  double tail = 0;
  for (; i < end; ++i)
    tail += static_cast<double>(contribution(i));
  for (int width = kReductionLanes / 2; width > 0; width /= 2) {
    for (int lane = 0; lane < width; ++lane)
      lanes[lane] += lanes[lane + width];
  }
  return lanes[0] + tail;
}

}  // namespace detail

// Values are computed into a small tile on the stack and then copied to `out`. The tile cannot
// alias any input, so the compiler needs no run-time overlap checks between `out` and the (often
// many, duplicated) leaves of a large expression; the copy costs one L1 round trip per element.
constexpr int kTileElements = 256;

// out[flat] = e for rows [row_begin, row_end) of `extent`; counts[k] += the number of those
// elements where conditions[k] holds. Generators see (row, col); no division per element.
template <class E, class... C>
void assign_rows(float* out, const E& expression, Extent2D extent, int row_begin, int row_end,
                 Counts<sizeof...(C)>* counts, const C&... condition_expressions) {
  constexpr std::size_t kConditions = sizeof...(C);
  // Local copies let the compiler keep node scalars and pointers in registers.
  const E e = expression;
  const std::tuple<C...> conditions(condition_expressions...);
  std::uint64_t totals[kConditions + 1] = {};  // +1: no zero-length array without conditions
  float tile[kTileElements];
  const int cols = extent.cols;
  for (int row = row_begin; row < row_end; ++row) {
    const std::size_t row_start = static_cast<std::size_t>(row) * static_cast<std::size_t>(cols);
    for (int tile_start = 0; tile_start < cols; tile_start += kTileElements) {
      const int tile_end = std::min(cols, tile_start + kTileElements);
      std::uint64_t tile_counts[kConditions + 1] = {};
      for (int col = tile_start; col < tile_end; ++col) {
        const Index2D index{row_start + static_cast<std::size_t>(col), row, col};
        tile[col - tile_start] = e.at(index);
        detail::count_conditions(tile_counts, index, conditions, std::index_sequence_for<C...>{});
      }
      std::memcpy(out + row_start + static_cast<std::size_t>(tile_start), tile,
                  static_cast<std::size_t>(tile_end - tile_start) * sizeof(float));
      for (std::size_t k = 0; k < kConditions; ++k)
        totals[k] += tile_counts[k];
    }
  }
  if (counts != nullptr) {
    for (std::size_t k = 0; k < kConditions; ++k)
      (*counts)[k] += totals[k];
  }
}

template <class E>
void assign_rows(float* out, const E& e, Extent2D extent, int row_begin, int row_end) {
  assign_rows(out, e, extent, row_begin, row_end, static_cast<Counts<0>*>(nullptr));
}

// Reductions over [begin, end), accumulated in double (the contributions of kernels/expr/pass.hpp).
template <class E>
double sum(const E& e, std::size_t begin, std::size_t end) {
  const auto r = reduce_sum(e);
  return detail::lane_sum(begin, end, [&](std::size_t i) { return r.contribution(i); });
}

template <class A, class B>
double dot(const A& a, const B& b, std::size_t begin, std::size_t end) {
  const auto r = reduce_dot(a, b);
  return detail::lane_sum(begin, end, [&](std::size_t i) { return r.contribution(i); });
}

template <class E>
double squared_norm(const E& e, std::size_t begin, std::size_t end) {
  const auto r = reduce_squared_norm(e);
  return detail::lane_sum(begin, end, [&](std::size_t i) { return r.contribution(i); });
}

// A fused pass (kernels/expr/pass.hpp) over a rows x cols array of `cols` columns: its stores
// for every element, and results[k * cols + c] = reduction k over column c (results may be null
// when the pass has no reductions). Each column's contributions combine row by row, in order: the
// result does not depend on threads or the machine. The CUDA twin is cuda::evaluate_pass in
// kernels/cuda/expr_device_evaluate.cuh.
template <class P>
void evaluate_pass(const P& pass, Extent2D extent, double* results) {
  constexpr int kReductions = P::kReductions;
  const P p = pass;  // see assign_rows
  const int cols = extent.cols;
  for (int k = 0; k < kReductions * cols; ++k)
    results[k] = 0;
  double acc[kReductions + 1] = {};  // +1: no zero-length array without reductions
  std::size_t flat = 0;
  for (int row = 0; row < extent.rows; ++row) {
    for (int col = 0; col < cols; ++col, ++flat) {
      for (int k = 0; k < kReductions; ++k)
        acc[k] = results[k * cols + col];
      apply_pass(p, Index2D{flat, row, col}, acc);
      for (int k = 0; k < kReductions; ++k)
        results[k * cols + col] = acc[k];
    }
  }
}

}  // namespace slicestream::expr
