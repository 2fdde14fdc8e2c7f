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
#include <type_traits>

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

// Placeholders for unused slots of a pass.
struct NoAssign {};
struct NoReduce {};

template <class T>
constexpr int kSlotUsed = std::is_same_v<T, NoAssign> || std::is_same_v<T, NoReduce> ? 0 : 1;

// A pass: up to two assignments, evaluated in order, then up to two reductions per column.
// A plain aggregate (no std::tuple) so that it is trivially copyable into a kernel.
template <class A0 = NoAssign, class A1 = NoAssign, class R0 = NoReduce, class R1 = NoReduce>
struct Pass {
  A0 a0;
  A1 a1;
  R0 r0;
  R1 r1;
  static constexpr int kReductions = kSlotUsed<R0> + kSlotUsed<R1>;
  static_assert(kSlotUsed<R0> >= kSlotUsed<R1>, "fill reduction slots in order");
};

template <class A>
SLICESTREAM_INLINE void assign_one(const A& a, std::size_t i, int column) {
  a.out[i] = a.expr.at(i, column);
}
SLICESTREAM_INLINE void assign_one(const NoAssign&, std::size_t, int) {}

template <class R>
SLICESTREAM_INLINE double contribution_of(const R& r, std::size_t i, int column) {
  return r.contribution(i, column);
}
SLICESTREAM_INLINE double contribution_of(const NoReduce&, std::size_t, int) {
  return 0;
}
template <class R>
SLICESTREAM_INLINE ReduceKind kind_of(const R& r) {
  return r.kind;
}
SLICESTREAM_INLINE ReduceKind kind_of(const NoReduce&) {
  return ReduceKind::kSumOfSquares;
}

// Element i: the assignments in order.
template <class P>
SLICESTREAM_INLINE void assign_at(const P& pass, std::size_t i, int column) {
  assign_one(pass.a0, i, column);
  assign_one(pass.a1, i, column);
}

// Folds element i's reduction inputs into acc[0..kReductions).
SLICESTREAM_INLINE double fold(ReduceKind kind, double acc, double v) {
  return kind == ReduceKind::kSumOfSquares ? acc + v : (v > acc ? v : acc);
}
template <class P>
SLICESTREAM_INLINE void reduce_at(const P& pass, std::size_t i, int column, double* acc) {
  if constexpr (P::kReductions > 0)
    acc[0] = fold(kind_of(pass.r0), acc[0], contribution_of(pass.r0, i, column));
  if constexpr (P::kReductions > 1)
    acc[1] = fold(kind_of(pass.r1), acc[1], contribution_of(pass.r1, i, column));
}
template <class P>
SLICESTREAM_INLINE ReduceKind reduction_kind(const P& pass, int k) {
  return k == 0 ? kind_of(pass.r0) : kind_of(pass.r1);
}

// Pass builders: assignments then reductions.
template <class A0>
Pass<A0> pass_of(const A0& a0) {
  return {a0, {}, {}, {}};
}
template <class A0, class R0>
Pass<A0, NoAssign, R0> pass_of(const A0& a0, const R0& r0) {
  return {a0, {}, r0, {}};
}
template <class R0>
Pass<NoAssign, NoAssign, R0> reduce_only(const R0& r0) {
  return {{}, {}, r0, {}};
}
template <class A0, class A1, class R0, class R1>
Pass<A0, A1, R0, R1> pass_of(const A0& a0, const A1& a1, const R0& r0, const R1& r1) {
  return {a0, a1, r0, r1};
}

// Host evaluation over `size` elements of `columns` columns; results[k * columns + c].
template <class P>
void evaluate_host(const P& pass, std::size_t size, int columns, double* results) {
  constexpr int kReductions = P::kReductions;
  for (int k = 0; k < kReductions * columns; ++k)
    results[k] = 0;
  double acc[2];
  for (std::size_t row_start = 0; row_start < size;
       row_start += static_cast<std::size_t>(columns)) {
    for (int c = 0; c < columns && row_start + static_cast<std::size_t>(c) < size; ++c) {
      const std::size_t i = row_start + static_cast<std::size_t>(c);
      assign_at(pass, i, c);
      for (int k = 0; k < kReductions; ++k)
        acc[k] = results[k * columns + c];
      reduce_at(pass, i, c, acc);
      for (int k = 0; k < kReductions; ++k)
        results[k * columns + c] = acc[k];
    }
  }
}

}  // namespace slicestream::tensorcore::fused
