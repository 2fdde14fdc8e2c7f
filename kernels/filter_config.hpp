// Ramp-filter settings shared by the CPU (FFTW) and CUDA (cuFFT) filters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slicestream {

enum class FilterWindow { kRamLak, kSheppLogan, kCosine, kHamming, kHann };

const char* to_string(FilterWindow window);
std::optional<FilterWindow> parse_filter_window(const std::string& name);  // "ram-lak", "hann", ...

struct FilterConfig {
  FilterWindow window = FilterWindow::kRamLak;
  // Frequencies above cutoff * Nyquist are zeroed; the window is stretched over [0, cutoff].
  float cutoff = 1.0f;
};

// Zero-padded row length: at least 2 * cols, rounded up to the next 2^a 3^b 5^c 7^d, or to the
// next power of two where that is at most 1.25 times as long. Both backends pad alike, so that
// the CUDA filter and its CPU twin compute the same discrete filter.
int padded_filter_width(int cols);
// The smallest 2^a 3^b 5^c 7^d >= n, and the smallest power of two >= n (n >= 1).
std::int64_t next_smooth_size(std::int64_t n);
std::int64_t next_power_of_two(std::int64_t n);

// Real gains for the padded_width / 2 + 1 frequency bins of an R2C transform, in pixel units
// (Kak & Slaney's spatial Ram-Lak kernel, transformed, times the window), already divided by
// padded_width so that an unnormalised forward + inverse FFT pair returns filtered values.
std::vector<float> ramp_filter_response(int padded_width, const FilterConfig& config);

}  // namespace slicestream
