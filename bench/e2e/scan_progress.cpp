#include "scan_progress.hpp"

#include <cstddef>

namespace slicestream::bench {

double crossing_time(const std::vector<ProgressSample>& samples, double count) {
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (static_cast<double>(samples[i].count) < count) continue;
    if (i == 0) return samples[0].t_s;
    const ProgressSample& a = samples[i - 1];
    const ProgressSample& b = samples[i];
    const double fraction =
        (count - static_cast<double>(a.count)) / static_cast<double>(b.count - a.count);
    return a.t_s + fraction * (b.t_s - a.t_s);
  }
  return samples.empty() ? 0 : samples.back().t_s;
}

double sustained_rate(const std::vector<ProgressSample>& samples, double frames) {
  const double t_low = crossing_time(samples, kMeasuredFrom * frames);
  const double t_high = crossing_time(samples, kMeasuredTo * frames);
  return t_high > t_low ? (kMeasuredTo - kMeasuredFrom) * frames / (t_high - t_low) : 0;
}

}  // namespace slicestream::bench
