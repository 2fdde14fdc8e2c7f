#include "clients/detector/detector_model.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace slicestream::detector {

namespace {

// SplitMix64 finaliser: decorrelates neighbouring keys before seeding the generator.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class PhotonCounter {
 public:
  PhotonCounter(bool noisy, std::uint64_t seed, std::uint64_t key)
      : noisy_(noisy), engine_(mix(seed ^ mix(key))) {}

  double count(double mean) {
    if (!noisy_) return mean;
    if (!(mean > 0)) return 0;  // poisson_distribution needs a positive mean
    return static_cast<double>(
        distribution_(engine_, std::poisson_distribution<long long>::param_type(mean)));
  }

 private:
  bool noisy_;
  std::mt19937_64 engine_;
  std::poisson_distribution<long long> distribution_;
};

}  // namespace

std::uint64_t noise_stream_key(FrameKind kind, std::uint64_t index_within_kind) {
  return (static_cast<std::uint64_t>(kind) << 56) ^ index_within_kind;
}

void expose(const DetectorModel& model, const float* line_integrals, bool beam_on,
            std::uint64_t noise_key, PixelBuffer& out) {
  PhotonCounter photons(model.poisson_noise, model.seed, noise_key);
  const std::size_t pixels = out.pixels();
  std::byte* data = out.bytes.data();
  const PixelType type = out.type;
  if (model.already_linear) {
    for (std::size_t i = 0; i < pixels; ++i) {
      const double p = line_integrals ? line_integrals[i] : 0.0;
      double value = p;
      if (model.poisson_noise) {
        const double counts = std::max(1.0, photons.count(model.flat_counts * std::exp(-p)));
        value = -std::log(counts / model.flat_counts);
      }
      store_pixel(type, data, i, value);
    }
    return;
  }
  for (std::size_t i = 0; i < pixels; ++i) {
    double mean = 0;
    if (beam_on) {
      mean = line_integrals ? model.flat_counts * std::exp(-static_cast<double>(line_integrals[i]))
                            : model.flat_counts;
    }
    store_pixel(type, data, i, model.dark_counts + photons.count(mean));
  }
}

}  // namespace slicestream::detector
