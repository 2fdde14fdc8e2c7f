// The median of a benchmark's repeated samples: for an even count the upper of the two middle
// ones (an observed sample, not an average of two).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace slicestream::bench {

inline double median(std::vector<double> samples) {
  const auto middle = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

}  // namespace slicestream::bench
