// Expression templates in the style of Quickvec (elsa thesis, section 5.4): an expression is a
// small value (pointers, scalars, functor structs) describing element-wise work; evaluating it at
// an index computes one element with no temporaries. Every node is trivially copyable so that a
// whole expression can be passed to a CUDA kernel by value, and every `at` compiles for host and
// device (SLICESTREAM_INLINE).
//
// Leaves:   ArrayLeaf<T> (uint16/uint32/float data read as float), Scalar, Generator<F> (an
//           index-aware functor F::at(row, col), e.g. CosineWeight).
// Nodes:    Unary<Op, A>, Binary<Op, A, B>, Ternary<Op, A, B, C>, built by the operators in
//           kernels/expr/operators.hpp.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/expr/index.hpp"
#include "kernels/host_device.hpp"

namespace slicestream::expr {

// Every expression type declares `using ExpressionTag = void;`.
template <class T, class = void>
struct IsExpression : std::false_type {};
template <class T>
struct IsExpression<T, std::void_t<typename T::ExpressionTag>> : std::true_type {};
template <class T>
constexpr bool kIsExpression = IsExpression<std::decay_t<T>>::value;

// Raw element types an ArrayLeaf may read.
template <class T>
constexpr bool kIsElement = std::is_same_v<T, std::uint16_t> || std::is_same_v<T, std::uint32_t> ||
                            std::is_same_v<T, float>;

template <class T>
struct ArrayLeaf {
  static_assert(kIsElement<T>, "ArrayLeaf reads uint16, uint32 or float elements");
  using ExpressionTag = void;
  const T* data;

  template <class I>
  SLICESTREAM_INLINE float at(const I& index) const {
    return static_cast<float>(data[flat_of(index)]);
  }
};

struct Scalar {
  using ExpressionTag = void;
  float value;

  template <class I>
  SLICESTREAM_INLINE float at(const I&) const {
    return value;
  }
};

// A value computed from the pixel position, e.g. CosineWeight::at(row, col). Only defined on 2D
// indices (see kernels/expr/index.hpp).
template <class F>
struct Generator {
  using ExpressionTag = void;
  F function;

  SLICESTREAM_INLINE float at(const Index2D& index) const {
    return function.at(index.row, index.col);
  }
};

template <class Op, class A>
struct Unary {
  using ExpressionTag = void;
  Op op;
  A a;

  template <class I>
  SLICESTREAM_INLINE auto at(const I& index) const {
    return op(a.at(index));
  }
};

template <class Op, class A, class B>
struct Binary {
  using ExpressionTag = void;
  Op op;
  A a;
  B b;

  template <class I>
  SLICESTREAM_INLINE auto at(const I& index) const {
    return op(a.at(index), b.at(index));
  }
};

template <class Op, class A, class B, class C>
struct Ternary {
  using ExpressionTag = void;
  Op op;
  A a;
  B b;
  C c;

  template <class I>
  SLICESTREAM_INLINE auto at(const I& index) const {
    return op(a.at(index), b.at(index), c.at(index));
  }
};

// Leaf constructors.
template <class T>
SLICESTREAM_INLINE ArrayLeaf<T> array(const T* data) {
  return {data};
}
SLICESTREAM_INLINE Scalar scalar(float value) {
  return {value};
}
template <class F>
SLICESTREAM_INLINE Generator<F> generator(const F& function) {
  return {function};
}

// Operands of the operators: expressions pass through, arithmetic values become Scalars.
template <class T>
SLICESTREAM_INLINE auto as_expression(const T& operand) {
  if constexpr (kIsExpression<T>) {
    return operand;
  } else {
    static_assert(std::is_arithmetic_v<T>, "operand is neither an expression nor a number");
    return Scalar{static_cast<float>(operand)};
  }
}

template <class T>
using AsExpression = decltype(as_expression(std::declval<T>()));

}  // namespace slicestream::expr
