// The fused preprocessing pass written once as expressions, for the CPU pass
// (kernels/cpu/preprocess_cpu.cpp) and its CUDA twin alike:
//
//   t      = (raw - dark) * inv_gain
//   result = dead or non-finite ? 0 : cosine(row, col) * (linear ? raw : -log(max(t, min_t)))
//
// plus the two guard conditions the evaluator counts in the same pass. The builders run on the
// host; the returned nodes are trivially copyable and evaluate on host and device.
#pragma once

#include "kernels/expr/expression.hpp"
#include "kernels/expr/operators.hpp"
#include "kernels/host_device.hpp"
#include "kernels/projection_map.hpp"

namespace slicestream::expr {

// CosineWeight::at checks `enabled` per pixel; as a compile-time constant in a local copy the
// check folds away and the host loop vectorises (a select on a run-time flag does not).
struct EnabledCosineWeight {
  CosineWeight weight;
  SLICESTREAM_INLINE float at(int row, int col) const {
    CosineWeight enabled = weight;
    enabled.enabled = true;
    return enabled.at(row, col);
  }
};

// result: the output value; non_finite and clamped_low: the conditions counted into
// PreprocessCounters::non_finite and ::clamped_low.
template <class Result, class NonFinite, class ClampedLow>
struct PreprocessExpression {
  Result result;
  NonFinite non_finite;
  ClampedLow clamped_low;
};

namespace detail {

template <bool kLinear, class Value, class Transmission>
auto attenuation(const Value& value, const Transmission& transmission, float min_transmission) {
  if constexpr (kLinear) {
    return value;
  } else {
    return neg_log(max(transmission, min_transmission));
  }
}

template <bool kWeighted, class Attenuation>
auto weighted(const Attenuation& attenuation, const CosineWeight& cosine) {
  if constexpr (kWeighted) {
    return generator(EnabledCosineWeight{cosine}) * attenuation;
  } else {
    return attenuation;
  }
}

// The result is finite exactly when the input and the transmission are (min_t <= max(t, min_t)
// <= FLT_MAX and 0 < cosine <= 1), so the guard never evaluates the logarithm a second time.
template <bool kLinear, class Value, class Transmission>
auto non_finite(const Value& value, const Transmission& transmission) {
  if constexpr (kLinear) {
    return !is_finite(value);
  } else {
    return !is_finite(value) || !is_finite(transmission);
  }
}

template <bool kLinear, class Value, class Dead, class Transmission>
auto clamped_low(const Value& value, const Dead& dead, const Transmission& transmission,
                 float min_transmission) {
  if constexpr (kLinear) {
    return scalar(0.0f) != 0.0f;  // nothing is clamped without a transmission
  } else {
    return !dead && is_finite(value) && transmission <= min_transmission;
  }
}

}  // namespace detail

// `kLinear`: the detector delivers line integrals (no flat field, no -log); `kWeighted`: multiply
// by the FDK cosine weight (cone beam). Pixel: uint16, uint32 or float. Evaluate on Index2D.
template <bool kLinear, bool kWeighted, class Pixel>
auto preprocess_expression(const Pixel* raw, const float* dark_table, const float* inv_gain_table,
                           float min_transmission, const CosineWeight& cosine) {
  const auto value = array(raw);
  const auto inv_gain = array(inv_gain_table);
  const auto dead = inv_gain == 0.0f;  // flat <= dark, or broken calibration
  const auto transmission = (value - array(dark_table)) * inv_gain;
  const auto non_finite = detail::non_finite<kLinear>(value, transmission);
  const auto result =
      select(dead || non_finite, 0.0f,
             detail::weighted<kWeighted>(
                 detail::attenuation<kLinear>(value, transmission, min_transmission), cosine));
  const auto clamped_low =
      detail::clamped_low<kLinear>(value, dead, transmission, min_transmission);
  return PreprocessExpression<decltype(result), decltype(non_finite), decltype(clamped_low)>{
      result, non_finite, clamped_low};
}

}  // namespace slicestream::expr
