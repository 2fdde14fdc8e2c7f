// IEEE 754 binary16 ("half") conversion for the WebSocket's compact image encoding: rounding to
// nearest, ties to even; subnormals, infinities and NaN kept.
#pragma once

#include <cstdint>

namespace slicestream {

std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t half);

}  // namespace slicestream
