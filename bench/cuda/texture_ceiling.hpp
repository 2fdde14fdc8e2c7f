// Micro-benchmarks of what one sample can cost at most: bilinear texture fetches (hardware
// filtering of fp32 and fp16 texels) and four L1 loads per sample, with the access
// locality of a slice backprojection (neighbouring threads, neighbouring texels; a new layer per
// step), and a device-to-device copy for the memory bandwidth.
#pragma once

#include <string>
#include <vector>

namespace slicestream::bench {

struct CeilingResult {
  std::string what;
  double per_second;  // samples (fetches) per second, or bytes per second for the copy
  std::string unit;
};

std::vector<CeilingResult> measure_ceilings();

}  // namespace slicestream::bench
