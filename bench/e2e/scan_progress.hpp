// A scan's progress over time (how many frames had arrived, or been integrated, when) and the
// rate measured from it: the slope between 20 % and 90 % of the frames. From 20 %: the start
// (FFT plans, first allocations) may build a backlog that is then caught up faster than the
// offered rate. End-to-end steps sample the server's integrated count; the detector -> bare PULL
// reference samples every arrival; both are measured alike.
#pragma once

#include <cstdint>
#include <vector>

namespace slicestream::bench {

inline constexpr double kMeasuredFrom = 0.2;  // fractions of a scan's frames
inline constexpr double kMeasuredTo = 0.9;

struct ProgressSample {
  double t_s = 0;
  std::uint64_t count = 0;
};

// When the count reached `count`, interpolated linearly between samples (the last sample's time
// when it never did; 0 without samples).
double crossing_time(const std::vector<ProgressSample>& samples, double count);

// Frames per second between kMeasuredFrom and kMeasuredTo of `frames`; 0 when not measurable.
double sustained_rate(const std::vector<ProgressSample>& samples, double frames);

}  // namespace slicestream::bench
