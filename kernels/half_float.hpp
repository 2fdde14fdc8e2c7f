// IEEE 754 binary16 ("half") on the host: rounding to nearest, ties to even; overflow to
// infinity; subnormals, infinities and NaN kept. Bit-exact with CUDA's __float2half_rn and
// __half2float, so that the CPU twins of fp16 kernels, the Tensor Core projector's blocks (built on
// the CPU) and the compact images sent to viewers all round the same way.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slicestream {

class Executor;

std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t half);

// Writes float_to_half(values[i] * factor) for `count` values to `out` (2 * count bytes, any
// alignment, host byte order); vectorised where the target has F16C (the same bits, NaN payloads
// aside).
void floats_to_halves(const float* values, std::size_t count, float factor, void* out);

// Writes half_to_float(h[i]) * factor for the `count` binary16 values h at `halves` (2 * count
// bytes, any alignment, host byte order) to `out`; vectorised where the target has F16C (the same
// values: the widening is exact, NaN payloads aside). What a viewer decodes an fp16 image with.
void halves_to_floats(const void* halves, std::size_t count, float factor, float* out);

// The scale of a compact (fp16) image: its largest finite magnitude, 1 when it has none. The
// values sent are h = value / scale, in [-1, 1], where binary16 keeps 11 significant bits down to
// 6e-5 of the largest value, whatever the image's units.
float half_image_scale(const float* values, std::size_t count);

// The two passes of an image's fp16 encoding in chunks on `executor` (the same results): a
// publishing thread hands them to helpers instead of spending milliseconds per large image.
float half_image_scale(const float* values, std::size_t count, Executor& executor);
void floats_to_halves(const float* values, std::size_t count, float factor, void* out,
                      Executor& executor);

}  // namespace slicestream
