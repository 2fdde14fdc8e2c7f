#include "pipeline/stages/calibration_accumulator.hpp"

#include <cmath>
#include <cstring>

namespace slicestream {
namespace {

// Payloads come from the transport without alignment guarantees: read through memcpy.
template <class Pixel>
std::uint64_t accumulate(const void* data, std::size_t pixels, double* sum,
                         std::uint32_t* samples) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::uint64_t non_finite = 0;
  for (std::size_t i = 0; i < pixels; ++i) {
    Pixel value;
    std::memcpy(&value, bytes + i * sizeof(Pixel), sizeof(Pixel));
    const double v = static_cast<double>(value);
    if (!std::isfinite(v)) {
      ++non_finite;
      continue;
    }
    sum[i] += v;
    ++samples[i];
  }
  return non_finite;
}

}  // namespace

void CalibrationAccumulator::reset(DetectorShape shape, int dark_count, int flat_count) {
  shape_ = shape;
  dark_ = Sum{};
  flat_ = Sum{};
  dark_.declared = dark_count;
  flat_.declared = flat_count;
  dark_.seen.assign(static_cast<std::size_t>(dark_count), false);
  flat_.seen.assign(static_cast<std::size_t>(flat_count), false);
}

std::uint64_t CalibrationAccumulator::add(FrameKind kind, std::uint32_t index,
                                          const FrameView& frame) {
  Sum& s = sum_of(kind);
  const std::size_t pixels = shape_.pixels();
  if (s.sum.empty()) {  // allocated on first use: most scans never need both
    s.sum.assign(pixels, 0.0);
    s.samples.assign(pixels, 0);
  }
  if (index < s.seen.size() && !s.seen[index]) {
    s.seen[index] = true;
    ++s.distinct;
  }
  ++s.frames;
  switch (frame.type) {
    case PixelType::kUint16:
      return accumulate<std::uint16_t>(frame.data, pixels, s.sum.data(), s.samples.data());
    case PixelType::kUint32:
      return accumulate<std::uint32_t>(frame.data, pixels, s.sum.data(), s.samples.data());
    case PixelType::kFloat32:
      return accumulate<float>(frame.data, pixels, s.sum.data(), s.samples.data());
  }
  return 0;
}

bool CalibrationAccumulator::complete() const {
  return dark_.distinct == dark_.declared && flat_.distinct == flat_.declared;
}

int CalibrationAccumulator::distinct_received(FrameKind kind) const {
  return sum_of(kind).distinct;
}

int CalibrationAccumulator::declared(FrameKind kind) const {
  return sum_of(kind).declared;
}

CalibrationAccumulator::Averages CalibrationAccumulator::average() const {
  Averages out;
  const std::size_t pixels = shape_.pixels();
  std::vector<bool> dead(pixels, false);
  if (dark_.frames > 0) {
    out.dark.resize(pixels);
    for (std::size_t i = 0; i < pixels; ++i) {
      if (dark_.samples[i] == 0) {
        dead[i] = true;
        out.dark[i] = 0.0f;
      } else {
        out.dark[i] = static_cast<float>(dark_.sum[i] / dark_.samples[i]);
      }
    }
  }
  if (flat_.frames > 0) {
    out.flat.resize(pixels);
    for (std::size_t i = 0; i < pixels; ++i) {
      if (flat_.samples[i] == 0) dead[i] = true;
      const float dark = out.dark.empty() ? 0.0f : out.dark[i];
      out.flat[i] = dead[i] ? dark : static_cast<float>(flat_.sum[i] / flat_.samples[i]);
    }
  }
  for (bool d : dead)
    out.dead_pixels += d ? 1 : 0;
  return out;
}

}  // namespace slicestream
