// fp16's finite range, shared by the CUDA store's fp16 texels and their CPU twin: values beyond
// it are clamped to it as they are stored (an infinity would turn every difference it meets into
// NaN).
#pragma once

namespace slicestream {

// The largest finite fp16 value, 2^15 (2 - 2^-10).
constexpr float kHalfMax = 65504.0f;

}  // namespace slicestream
