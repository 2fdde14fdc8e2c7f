// Operators and named functions that build expression nodes. An operator takes part in overload
// resolution only when at least one operand is an expression; the other may be a plain number.
//
//   auto t = (array(raw) - array(dark)) * array(inv_gain);
//   auto y = select(is_finite(t), neg_log(max(t, 1e-6f)), 0.0f);
#pragma once

#include <type_traits>

#include "kernels/expr/expression.hpp"
#include "kernels/expr/functors.hpp"
#include "kernels/host_device.hpp"

namespace slicestream::expr {

template <class T>
constexpr bool kIsOperand = kIsExpression<T> || std::is_arithmetic_v<std::decay_t<T>>;

template <class A, class B>
using EnableIfBinary =
    std::enable_if_t<(kIsExpression<A> || kIsExpression<B>)&&kIsOperand<A> && kIsOperand<B>, int>;
template <class A>
using EnableIfUnary = std::enable_if_t<kIsExpression<A>, int>;

template <class Op, class A>
SLICESTREAM_INLINE Unary<Op, AsExpression<A>> make_unary(const A& a) {
  return {Op{}, as_expression(a)};
}
template <class Op, class A, class B>
SLICESTREAM_INLINE Binary<Op, AsExpression<A>, AsExpression<B>> make_binary(const A& a,
                                                                            const B& b) {
  return {Op{}, as_expression(a), as_expression(b)};
}
template <class Op, class A, class B, class C>
SLICESTREAM_INLINE Ternary<Op, AsExpression<A>, AsExpression<B>, AsExpression<C>> make_ternary(
    const A& a, const B& b, const C& c) {
  return {Op{}, as_expression(a), as_expression(b), as_expression(c)};
}

// Arithmetic.
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator+(const A& a, const B& b) {
  return make_binary<Add>(a, b);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator-(const A& a, const B& b) {
  return make_binary<Subtract>(a, b);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator*(const A& a, const B& b) {
  return make_binary<Multiply>(a, b);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator/(const A& a, const B& b) {
  return make_binary<Divide>(a, b);
}
template <class A, EnableIfUnary<A> = 0>
SLICESTREAM_INLINE auto operator-(const A& a) {
  return make_unary<Negate>(a);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto min(const A& a, const B& b) {
  return make_binary<Minimum>(a, b);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto max(const A& a, const B& b) {
  return make_binary<Maximum>(a, b);
}
template <class A, EnableIfUnary<A> = 0>
SLICESTREAM_INLINE auto abs(const A& a) {
  return make_unary<Absolute>(a);
}
template <class A, EnableIfUnary<A> = 0>
SLICESTREAM_INLINE auto log(const A& a) {
  return make_unary<Log>(a);
}
template <class A, EnableIfUnary<A> = 0>
SLICESTREAM_INLINE auto neg_log(const A& a) {
  return make_unary<NegativeLog>(a);
}
template <class A, EnableIfUnary<A> = 0>
SLICESTREAM_INLINE auto sqrt(const A& a) {
  return make_unary<SquareRoot>(a);
}
template <class A, EnableIfUnary<A> = 0>
SLICESTREAM_INLINE auto square(const A& a) {
  return make_unary<Square>(a);
}

// Predicates (bool-valued expressions).
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator<(const A& a, const B& b) {
  return make_binary<Less>(a, b);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator<=(const A& a, const B& b) {
  return make_binary<LessEqual>(a, b);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator>(const A& a, const B& b) {
  return make_binary<Greater>(a, b);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator>=(const A& a, const B& b) {
  return make_binary<GreaterEqual>(a, b);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator==(const A& a, const B& b) {
  return make_binary<Equal>(a, b);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator!=(const A& a, const B& b) {
  return make_binary<NotEqual>(a, b);
}
template <class A, EnableIfUnary<A> = 0>
SLICESTREAM_INLINE auto is_finite(const A& a) {
  return make_unary<IsFinite>(a);
}
// Both operands are always evaluated (expressions have no side effects).
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator&&(const A& a, const B& b) {
  return make_binary<LogicalAnd>(a, b);
}
template <class A, class B, EnableIfBinary<A, B> = 0>
SLICESTREAM_INLINE auto operator||(const A& a, const B& b) {
  return make_binary<LogicalOr>(a, b);
}
template <class A, EnableIfUnary<A> = 0>
SLICESTREAM_INLINE auto operator!(const A& a) {
  return make_unary<LogicalNot>(a);
}

// Guards.
template <class C, class A, class B, EnableIfUnary<C> = 0>
SLICESTREAM_INLINE auto select(const C& condition, const A& if_true, const B& if_false) {
  return make_ternary<Select>(condition, if_true, if_false);
}
template <class X, class Lo, class Hi, EnableIfUnary<X> = 0>
SLICESTREAM_INLINE auto clamp(const X& x, const Lo& lo, const Hi& hi) {
  return make_ternary<Clamp>(x, lo, hi);
}

}  // namespace slicestream::expr
