// Fused element-wise expressions with fused per-column reductions for multi-slice CGLS
// (elsa thesis §5.4 Quickvec-style expression templates, and §6.2's "evaluate and reduce in one
// kernel"). Vectors hold `columns` independent right-hand sides row-major (element i belongs to
// column i % columns), and every CG scalar is per column.
//
// One pass evaluates a list of assignments out_k[i] = e_k(i) in order, then the reductions (sums
// or maxima of |.| per column), which may read the values just assigned; each index reads and
// writes only its own element, so in-place updates (r = r - alpha * q) are safe. The host loop
// here and the CUDA kernel in cuda/fused_expression_kernel.cuh evaluate the same expression
// objects, so the CPU and GPU solvers are twins.
//
// Minimal on purpose: the shared layer kernels/expr (kernels-cpu branch) was not on main when
// this was written; these nodes follow its conventions (trivially copyable structs with
// SLICESTREAM_INLINE at()) so that the two can be unified.
#pragma once

#include <cmath>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/host_device.hpp"

namespace slicestream::tensorcore::fused {

struct ExpressionBase {};
template <class T>
constexpr bool kIsExpression = std::is_base_of_v<ExpressionBase, std::decay_t<T>>;

// Element i of a vector.
struct Vector : ExpressionBase {
  const float* data;
  SLICESTREAM_INLINE float at(std::size_t i, int) const { return data[i]; }
};
// One scalar per column, read from memory (device memory on the GPU): the CG alpha and beta.
struct ColumnScalar : ExpressionBase {
  const float* values;
  SLICESTREAM_INLINE float at(std::size_t, int column) const { return values[column]; }
};
struct Constant : ExpressionBase {
  float value;
  SLICESTREAM_INLINE float at(std::size_t, int) const { return value; }
};

struct AddOp {
  SLICESTREAM_INLINE float operator()(float a, float b) const { return a + b; }
};
struct SubtractOp {
  SLICESTREAM_INLINE float operator()(float a, float b) const { return a - b; }
};
struct MultiplyOp {
  SLICESTREAM_INLINE float operator()(float a, float b) const { return a * b; }
};

template <class Op, class A, class B>
struct Binary : ExpressionBase {
  A a;
  B b;
  SLICESTREAM_INLINE float at(std::size_t i, int column) const {
    return Op{}(a.at(i, column), b.at(i, column));
  }
};

template <class T>
SLICESTREAM_INLINE auto as_expression(const T& t) {
  if constexpr (kIsExpression<T>) {
    return t;
  } else {
    static_assert(std::is_arithmetic_v<T>, "operand is neither an expression nor a number");
    return Constant{{}, static_cast<float>(t)};
  }
}

template <class A, class B>
using EnableIfOperands =
    std::enable_if_t<(kIsExpression<A> || kIsExpression<B>)&&(
                         kIsExpression<A> || std::is_arithmetic_v<A>)&&(kIsExpression<B> ||
                                                                        std::is_arithmetic_v<B>),
                     int>;

template <class Op, class A, class B>
SLICESTREAM_INLINE auto make_binary(const A& a, const B& b) {
  using L = decltype(as_expression(a));
  using R = decltype(as_expression(b));
  return Binary<Op, L, R>{{}, as_expression(a), as_expression(b)};
}
template <class A, class B, EnableIfOperands<A, B> = 0>
SLICESTREAM_INLINE auto operator+(const A& a, const B& b) {
  return make_binary<AddOp>(a, b);
}
template <class A, class B, EnableIfOperands<A, B> = 0>
SLICESTREAM_INLINE auto operator-(const A& a, const B& b) {
  return make_binary<SubtractOp>(a, b);
}
template <class A, class B, EnableIfOperands<A, B> = 0>
SLICESTREAM_INLINE auto operator*(const A& a, const B& b) {
  return make_binary<MultiplyOp>(a, b);
}

SLICESTREAM_INLINE Vector vec(const float* data) {
  return {{}, data};
}
SLICESTREAM_INLINE ColumnScalar per_column(const float* values) {
  return {{}, values};
}

// out[i] = e(i).
template <class E>
struct Assign {
  float* out;
  E expr;
};
template <class E>
SLICESTREAM_INLINE Assign<E> assign(float* out, const E& e) {
  return {out, e};
}

// Reductions per column: the sum of e * e, or the maximum of |e|.
enum class ReduceKind { kSumOfSquares, kMaxAbs };
template <class E>
struct Reduce {
  ReduceKind kind;
  E expr;
  SLICESTREAM_INLINE double contribution(std::size_t i, int column) const {
    const double v = expr.at(i, column);
    return kind == ReduceKind::kSumOfSquares ? v * v : fabs(v);
  }
};
template <class E>
SLICESTREAM_INLINE Reduce<E> sum_of_squares(const E& e) {
  return {ReduceKind::kSumOfSquares, e};
}
template <class E>
SLICESTREAM_INLINE Reduce<E> max_abs(const E& e) {
  return {ReduceKind::kMaxAbs, e};
}

// A pass: assignments then reductions. Results: reductions x columns doubles (row-major).
template <class Assigns, class Reduces>
struct Pass {
  Assigns assigns;  // std::tuple<Assign<...>...>
  Reduces reduces;  // std::tuple<Reduce<...>...>
};
template <class... A, class... R>
Pass<std::tuple<A...>, std::tuple<R...>> make_pass(std::tuple<A...> assigns,
                                                   std::tuple<R...> reduces) {
  return {assigns, reduces};
}

template <class P>
constexpr int kReductionCount = static_cast<int>(std::tuple_size_v<decltype(P::reduces)>);

// Evaluates element i: assignments in order, then returns nothing; reductions are read with
// reduction_at.
template <class P>
SLICESTREAM_INLINE void assign_at(const P& pass, std::size_t i, int column) {
  (void)i, (void)column;  // unused without assignments
  std::apply([&](const auto&... a) { ((a.out[i] = a.expr.at(i, column)), ...); }, pass.assigns);
}

template <int K, class P>
SLICESTREAM_INLINE double reduction_at(const P& pass, std::size_t i, int column) {
  return std::get<K>(pass.reduces).contribution(i, column);
}
template <int K, class P>
SLICESTREAM_INLINE ReduceKind reduction_kind(const P& pass) {
  return std::get<K>(pass.reduces).kind;
}

template <class P, int... K>
SLICESTREAM_INLINE void accumulate_host(const P& pass, std::size_t i, int column, int columns,
                                        double* results, std::integer_sequence<int, K...>) {
  (void)pass, (void)i, (void)column, (void)columns, (void)results;  // unused without reductions
  ((results[K * columns + column] =
        reduction_kind<K>(pass) == ReduceKind::kSumOfSquares
            ? results[K * columns + column] + reduction_at<K>(pass, i, column)
            : fmax(results[K * columns + column], reduction_at<K>(pass, i, column))),
   ...);
}

// Host evaluation over `size` elements of `columns` columns; results[k * columns + c].
template <class P>
void evaluate_host(const P& pass, std::size_t size, int columns, double* results) {
  constexpr int kReductions = kReductionCount<P>;
  for (int k = 0; k < kReductions * columns; ++k)
    results[k] = 0;
  for (std::size_t row_start = 0; row_start < size;
       row_start += static_cast<std::size_t>(columns)) {
    for (int c = 0; c < columns && row_start + static_cast<std::size_t>(c) < size; ++c) {
      const std::size_t i = row_start + static_cast<std::size_t>(c);
      assign_at(pass, i, c);
      accumulate_host(pass, i, c, columns, results, std::make_integer_sequence<int, kReductions>{});
    }
  }
}

}  // namespace slicestream::tensorcore::fused
