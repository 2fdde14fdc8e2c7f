// Shared helpers of the kernel tests: fresh random inputs (seed printed on failure) and error
// measures against float64 references.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace slicestream::test {

// A generator seeded from std::random_device: every run sees new inputs. The seed goes into the
// failure message (SCOPED_TRACE); SLICESTREAM_TEST_SEED=<seed> replays a failing run.
class RandomSource {
 public:
  RandomSource() : seed_(initial_seed()), engine_(seed_) {}
  std::uint64_t seed() const { return seed_; }
  std::string trace() const { return "random seed " + std::to_string(seed_); }
  std::mt19937_64& engine() { return engine_; }

  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(engine_);
  }
  int uniform_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(engine_); }
  std::vector<float> floats(std::size_t count, double lo, double hi) {
    std::vector<float> values(count);
    for (float& v : values)
      v = static_cast<float>(uniform(lo, hi));
    return values;
  }

 private:
  static std::uint64_t initial_seed() {
    if (const char* replay = std::getenv("SLICESTREAM_TEST_SEED")) {
      return std::strtoull(replay, nullptr, 10);
    }
    return std::random_device{}();
  }

  std::uint64_t seed_;
  std::mt19937_64 engine_;
};

// ||a - b|| / ||b|| in double.
template <class A, class B>
double relative_error(const A& a, const B& b) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    diff += d * d;
    ref += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  return std::sqrt(diff / ref);
}

template <class A>
double max_abs(const A& a) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(a[i])));
  return m;
}

}  // namespace slicestream::test
