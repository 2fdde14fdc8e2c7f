// The element-wise operations of expression nodes: functor structs rather than lambdas, so that
// node types are nameable, trivially copyable and callable from host and device code.
//
// All operations evaluate both operands (no short-circuiting): a branch-free body is what lets
// the host loop vectorise, and operands have no side effects.
#pragma once

#include "kernels/expr/math.hpp"
#include "kernels/host_device.hpp"

namespace slicestream::expr {

struct Add {
  SLICESTREAM_INLINE float operator()(float a, float b) const { return a + b; }
};
struct Subtract {
  SLICESTREAM_INLINE float operator()(float a, float b) const { return a - b; }
};
struct Multiply {
  SLICESTREAM_INLINE float operator()(float a, float b) const { return a * b; }
};
struct Divide {
  SLICESTREAM_INLINE float operator()(float a, float b) const { return a / b; }
};
// NaN in `a` propagates; NaN in `b` alone yields `a` (the x86 minps/maxps order).
struct Minimum {
  SLICESTREAM_INLINE float operator()(float a, float b) const { return b < a ? b : a; }
};
struct Maximum {
  SLICESTREAM_INLINE float operator()(float a, float b) const { return a < b ? b : a; }
};
struct Negate {
  SLICESTREAM_INLINE float operator()(float a) const { return -a; }
};
struct Absolute {
  SLICESTREAM_INLINE float operator()(float a) const { return fabsf(a); }
};
struct Log {
  SLICESTREAM_INLINE float operator()(float a) const { return log_value(a); }
};
// -log(a): Beer-Lambert linearisation.
struct NegativeLog {
  SLICESTREAM_INLINE float operator()(float a) const { return -log_value(a); }
};
struct SquareRoot {
  SLICESTREAM_INLINE float operator()(float a) const { return sqrtf(a); }
};
struct Square {
  SLICESTREAM_INLINE float operator()(float a) const { return a * a; }
};

// Predicates yield bool expressions, usable by select() and by the counters of the evaluator.
struct Less {
  SLICESTREAM_INLINE bool operator()(float a, float b) const { return a < b; }
};
struct LessEqual {
  SLICESTREAM_INLINE bool operator()(float a, float b) const { return a <= b; }
};
struct Greater {
  SLICESTREAM_INLINE bool operator()(float a, float b) const { return a > b; }
};
struct GreaterEqual {
  SLICESTREAM_INLINE bool operator()(float a, float b) const { return a >= b; }
};
struct Equal {
  SLICESTREAM_INLINE bool operator()(float a, float b) const { return a == b; }
};
struct NotEqual {
  SLICESTREAM_INLINE bool operator()(float a, float b) const { return a != b; }
};
struct IsFinite {
  SLICESTREAM_INLINE bool operator()(float a) const { return is_finite_value(a); }
};
// Bitwise on bools on purpose: both sides are already evaluated, and & compiles without a branch.
struct LogicalAnd {
  SLICESTREAM_INLINE bool operator()(bool a, bool b) const { return a & b; }
};
struct LogicalOr {
  SLICESTREAM_INLINE bool operator()(bool a, bool b) const { return a | b; }
};
struct LogicalNot {
  SLICESTREAM_INLINE bool operator()(bool a) const { return !a; }
};

struct Select {
  SLICESTREAM_INLINE float operator()(bool condition, float if_true, float if_false) const {
    return condition ? if_true : if_false;
  }
};
// clamp(x, lo, hi) = min(max(x, lo), hi); NaN x stays NaN.
struct Clamp {
  SLICESTREAM_INLINE float operator()(float x, float lo, float hi) const {
    const float above = x < lo ? lo : x;
    return hi < above ? hi : above;
  }
};

}  // namespace slicestream::expr
