// Fused passes: several stores and reductions evaluated in one sweep over the data (elsa thesis
// §6.2: evaluate and reduce in one kernel, no temporaries, one traversal), for arrays of
// `columns` independent columns stored row-major, i.e. an Extent2D of rows x columns where
// element (row, col) belongs to column col. Every reduction is per column: the CG scalars of a
// multi-slice solve (one slice per column), a max |.| per column for operand scaling.
//
//   const auto step = fused(store(r, array(r) - per_column(alpha) * array(q)),
//                           reduce_squared_norm(array(r)));
//   evaluate_pass(step, Extent2D{rays, columns}, r_norm2);             // host, host_evaluate.hpp
//   cuda::evaluate_pass(step, Extent2D{rays, columns}, d_r2, stream);  // device, .cuh in cuda/
//
// At each element the steps run in the order given, so a reduction may read what a store before
// it has just written; each element reads and writes only itself, so in-place updates are safe.
// Reductions accumulate in double: sums of contributions, or maxima of non-negative ones.
// Results: results[k * columns + col] for the k-th reduction of the pass.
//
// Everything here is a trivially copyable aggregate (no std::tuple), so a whole pass is passed to
// a CUDA kernel by value.
#pragma once

#include <cmath>
#include <type_traits>

#include "kernels/expr/expression.hpp"
#include "kernels/expr/index.hpp"
#include "kernels/host_device.hpp"

namespace slicestream::expr {

// One value per column (e.g. per-slice CG step sizes), read from memory; only on 2D indices.
struct ColumnValues {
  const float* values;
  SLICESTREAM_INLINE float at(int, int col) const { return values[col]; }
};
SLICESTREAM_INLINE Generator<ColumnValues> per_column(const float* values) {
  return {{values}};
}

// How partial results of a reduction combine; the identity of both is 0 (maxima are taken of
// non-negative contributions only).
struct SumCombine {
  static constexpr bool kMax = false;
  SLICESTREAM_INLINE static double combine(double a, double b) { return a + b; }
};
struct MaxCombine {
  static constexpr bool kMax = true;
  SLICESTREAM_INLINE static double combine(double a, double b) { return a < b ? b : a; }
};

// Reductions: a per-element contribution in double and how contributions combine. The one-operand
// kinds transform the element (widened to double first); a dot product multiplies in double.
struct KeepValue {
  SLICESTREAM_INLINE double operator()(double v) const { return v; }
};
struct SquareValue {
  SLICESTREAM_INLINE double operator()(double v) const { return v * v; }
};
struct AbsoluteValue {
  SLICESTREAM_INLINE double operator()(double v) const { return fabs(v); }
};

template <class CombineKind, class Transform, class E>
struct ReductionOf {
  using ReductionTag = void;
  using Combine = CombineKind;
  E e;
  template <class I>
  SLICESTREAM_INLINE double contribution(const I& index) const {
    return Transform{}(static_cast<double>(e.at(index)));
  }
};
template <class E>
using SumOf = ReductionOf<SumCombine, KeepValue, E>;
template <class E>
using SquaredNormOf = ReductionOf<SumCombine, SquareValue, E>;
template <class E>
using MaxAbsOf = ReductionOf<MaxCombine, AbsoluteValue, E>;

template <class A, class B>
struct DotOf {
  using ReductionTag = void;
  using Combine = SumCombine;
  A a;
  B b;
  template <class I>
  SLICESTREAM_INLINE double contribution(const I& index) const {
    return static_cast<double>(a.at(index)) * static_cast<double>(b.at(index));
  }
};

template <class E>
SLICESTREAM_INLINE SumOf<AsExpression<E>> reduce_sum(const E& e) {
  return {as_expression(e)};
}
template <class E>
SLICESTREAM_INLINE SquaredNormOf<AsExpression<E>> reduce_squared_norm(const E& e) {
  return {as_expression(e)};
}
template <class A, class B>
SLICESTREAM_INLINE DotOf<AsExpression<A>, AsExpression<B>> reduce_dot(const A& a, const B& b) {
  return {as_expression(a), as_expression(b)};
}
template <class E>
SLICESTREAM_INLINE MaxAbsOf<AsExpression<E>> reduce_max_abs(const E& e) {
  return {as_expression(e)};
}

// out[flat] = e.
template <class E>
struct Store {
  float* out;
  E e;
  template <class I>
  SLICESTREAM_INLINE void apply(const I& index) const {
    out[flat_of(index)] = e.at(index);
  }
};
template <class E>
SLICESTREAM_INLINE Store<AsExpression<E>> store(float* out, const E& e) {
  return {out, as_expression(e)};
}

template <class T, class = void>
struct IsReduction : std::false_type {};
template <class T>
struct IsReduction<T, std::void_t<typename T::ReductionTag>> : std::true_type {};
template <class T>
constexpr bool kIsReduction = IsReduction<T>::value;

// The steps of a pass as a recursive aggregate.
template <class... Steps>
struct StepList {};
template <class Head, class... Tail>
struct StepList<Head, Tail...> {
  Head head;
  StepList<Tail...> tail;
};

namespace detail {

// Whether the k-th reduction among Steps takes maxima (else it sums).
template <class... Steps>
struct ReductionIsMax {
  SLICESTREAM_INLINE static bool at(int) { return false; }
};
template <class Head, class... Tail>
struct ReductionIsMax<Head, Tail...> {
  SLICESTREAM_INLINE static bool at(int k) {
    if constexpr (kIsReduction<Head>) {
      return k == 0 ? Head::Combine::kMax : ReductionIsMax<Tail...>::at(k - 1);
    } else {
      return ReductionIsMax<Tail...>::at(k);
    }
  }
};

}  // namespace detail

template <class... Steps>
struct Pass {
  StepList<Steps...> steps;
  static constexpr int kReductions = (0 + ... + (kIsReduction<Steps> ? 1 : 0));
  SLICESTREAM_INLINE static bool reduction_is_max(int k) {
    return detail::ReductionIsMax<Steps...>::at(k);
  }
};

namespace detail {

SLICESTREAM_INLINE StepList<> step_list() {
  return {};
}
template <class Head, class... Tail>
SLICESTREAM_INLINE StepList<Head, Tail...> step_list(const Head& head, const Tail&... tail) {
  return {head, step_list(tail...)};
}

// Runs the steps at `index` in order; reduction K folds into acc[K].
template <int K, class I>
SLICESTREAM_INLINE void apply_steps(const StepList<>&, const I&, double*) {}
template <int K, class I, class Head, class... Tail>
SLICESTREAM_INLINE void apply_steps(const StepList<Head, Tail...>& steps, const I& index,
                                    double* acc) {
  if constexpr (kIsReduction<Head>) {
    acc[K] = Head::Combine::combine(acc[K], steps.head.contribution(index));
    apply_steps<K + 1>(steps.tail, index, acc);
  } else {
    steps.head.apply(index);
    apply_steps<K>(steps.tail, index, acc);
  }
}

}  // namespace detail

// A pass of stores and reductions (any number, in the order they run at each element).
template <class... Steps>
SLICESTREAM_INLINE Pass<Steps...> fused(const Steps&... steps) {
  return {detail::step_list(steps...)};
}

// Element `index` of a pass: the stores, and the reductions folded into acc[0..kReductions).
template <class P, class I>
SLICESTREAM_INLINE void apply_pass(const P& pass, const I& index, double* acc) {
  detail::apply_steps<0>(pass.steps, index, acc);
}

}  // namespace slicestream::expr
