#include "kernels/filter_config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace slicestream {
namespace {

constexpr double kPi = 3.14159265358979323846;

struct WindowName {
  FilterWindow window;
  const char* name;
};
constexpr WindowName kWindowNames[] = {
    {FilterWindow::kRamLak, "ram-lak"}, {FilterWindow::kSheppLogan, "shepp-logan"},
    {FilterWindow::kCosine, "cosine"},  {FilterWindow::kHamming, "hamming"},
    {FilterWindow::kHann, "hann"},
};

// "Ram_Lak", "ramlak" and "RAM-LAK" all name the same window.
std::string canonical_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// Kak & Slaney (eq. 3.61) with tau = 1 pixel: h(0) = 1/4, h(n odd) = -1/(pi n)^2, h(n even) = 0.
double ram_lak_kernel(std::int64_t n) {
  if (n == 0) return 0.25;
  if (n % 2 == 0) return 0.0;
  const double pin = kPi * static_cast<double>(n);
  return -1.0 / (pin * pin);
}

// ASTRA's windows (cuda/2d/fft.cu genFilter) as functions of w = 2 pi k / P in [0, pi] at
// Nyquist, stretched by the cutoff d: frequencies with w > pi d are zeroed by the caller.
double window_gain(FilterWindow window, double w, double d) {
  switch (window) {
    case FilterWindow::kRamLak:
      return 1.0;
    case FilterWindow::kSheppLogan: {
      const double x = w / (2.0 * d);
      return x == 0.0 ? 1.0 : std::sin(x) / x;
    }
    case FilterWindow::kCosine:
      return std::cos(w / (2.0 * d));
    case FilterWindow::kHamming:
      return 0.54 + 0.46 * std::cos(w / d);
    case FilterWindow::kHann:
      return 0.5 * (1.0 + std::cos(w / d));
  }
  return 1.0;
}

}  // namespace

const char* to_string(FilterWindow window) {
  for (const WindowName& entry : kWindowNames) {
    if (entry.window == window) return entry.name;
  }
  return "unknown";
}

std::optional<FilterWindow> parse_filter_window(const std::string& name) {
  const std::string wanted = canonical_name(name);
  for (const WindowName& entry : kWindowNames) {
    if (canonical_name(entry.name) == wanted) return entry.window;
  }
  if (wanted == "hanning") return FilterWindow::kHann;
  return std::nullopt;
}

int padded_filter_width(int cols) {
  // Far beyond any detector; keeps 2 * cols and the search inside int.
  constexpr int kMaxCols = 1 << 24;
  if (cols <= 0 || cols > kMaxCols) {
    throw std::invalid_argument("padded_filter_width: detector width " + std::to_string(cols) +
                                " outside [1, " + std::to_string(kMaxCols) + "]");
  }
  const std::int64_t twice = 2 * static_cast<std::int64_t>(cols);
  const std::int64_t smooth = next_smooth_size(twice);
  const std::int64_t power_of_two = next_power_of_two(twice);
  // cuFFT transforms a power of two in fewer passes than other sizes, while FFTW takes sizes this
  // close alike; a power of two much longer than the smooth size costs the CPU its length
  // (docs/performance.md, "The ramp filter padded to a near power of two").
  return static_cast<int>(power_of_two * 4 <= smooth * 5 ? power_of_two : smooth);
}

std::int64_t next_smooth_size(std::int64_t n) {
  auto is_7_smooth = [](std::int64_t m) {
    for (std::int64_t p : {2, 3, 5, 7}) {
      while (m % p == 0)
        m /= p;
    }
    return m == 1;
  };
  n = std::max<std::int64_t>(n, 1);
  while (!is_7_smooth(n))
    ++n;
  return n;
}

std::int64_t next_power_of_two(std::int64_t n) {
  std::int64_t power = 1;
  while (power < n)
    power *= 2;
  return power;
}

std::vector<float> ramp_filter_response(int padded_width, const FilterConfig& config) {
  if (padded_width < 2) {
    throw std::invalid_argument("ramp filter needs a padded width >= 2, got " +
                                std::to_string(padded_width));
  }
  if (!(config.cutoff > 0.0f) || !std::isfinite(config.cutoff)) {
    throw std::invalid_argument("ramp filter cutoff must be a positive finite number");
  }
  const std::int64_t p = padded_width;
  const std::int64_t bins = p / 2 + 1;
  // cos(2 pi m / P) for m in [0, P): the DFT below then needs no trigonometry per term.
  std::vector<double> cosine(static_cast<std::size_t>(p));
  for (std::int64_t m = 0; m < p; ++m) {
    cosine[static_cast<std::size_t>(m)] =
        std::cos(2.0 * kPi * static_cast<double>(m) / static_cast<double>(p));
  }
  // The kernel wrapped onto the circle of length P is real and even, so its DFT is real:
  //   H[k] = h(0) + 2 sum_{n=1}^{ceil(P/2)-1} h(n) cos(2 pi k n / P) [+ h(P/2) cos(pi k), P even],
  // evaluated in double (only odd n contribute). Transforming the spatial kernel rather than
  // sampling |f| gives the correct DC gain (Kak & Slaney §3.3.3).
  const std::int64_t paired_end = (p + 1) / 2;  // n < paired_end appear as +n and -n
  const double d = config.cutoff;
  std::vector<float> response(static_cast<std::size_t>(bins));
  for (std::int64_t k = 0; k < bins; ++k) {
    double h = ram_lak_kernel(0);
    const std::int64_t step = (2 * k) % p;  // (k * n) mod P advances by 2k as n advances by 2
    std::int64_t phase = k % p;             // (k * 1) mod P
    for (std::int64_t n = 1; n < paired_end; n += 2) {
      h += 2.0 * ram_lak_kernel(n) * cosine[static_cast<std::size_t>(phase)];
      phase += step;
      if (phase >= p) phase -= p;
    }
    if (p % 2 == 0) h += ram_lak_kernel(p / 2) * (k % 2 == 0 ? 1.0 : -1.0);
    const double w = 2.0 * kPi * static_cast<double>(k) / static_cast<double>(p);
    // Compared as 2k > cutoff * P so that Nyquist survives a cutoff of 1 exactly.
    const bool above_cutoff = 2.0 * static_cast<double>(k) > d * static_cast<double>(p);
    const double gain = above_cutoff ? 0.0 : h * window_gain(config.window, w, d);
    response[static_cast<std::size_t>(k)] = static_cast<float>(gain / static_cast<double>(p));
  }
  return response;
}

}  // namespace slicestream
