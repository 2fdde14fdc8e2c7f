// Helpers of the GPU tests: skip with the reason where no usable GPU exists, move vectors to and
// from the device, and build random geometries, projections and grids.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/device_probe.hpp"
#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"
#include "tests/kernels/test_support.hpp"

// GTEST_SKIP returns from the calling function: use at the top of a test body.
#define SLICESTREAM_REQUIRE_GPU()                                                               \
  do {                                                                                          \
    const std::string slicestream_gpu_reason = slicestream::cuda::device_unavailable_reason(0); \
    if (!slicestream_gpu_reason.empty()) {                                                      \
      GTEST_SKIP() << "no usable GPU: " << slicestream_gpu_reason;                              \
    }                                                                                           \
  } while (0)

namespace slicestream::test {

constexpr double kPi = 3.14159265358979323846;

inline cuda::DeviceBuffer<float> to_device(const std::vector<float>& host) {
  cuda::DeviceBuffer<float> device(host.size());
  SLICESTREAM_CUDA_CHECK(
      cudaMemcpy(device.data(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return device;
}

inline std::vector<float> to_host(const float* device, std::size_t count) {
  std::vector<float> host(count);
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
  SLICESTREAM_CUDA_CHECK(
      cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

// A circular geometry over 180 degrees (parallel) or 360 (cone), magnification about 2, the
// object inside a box of half-size `half_box_mm` that the detector covers.
inline ScanGeometry circular_geometry(BeamKind beam, DetectorShape detector, int projections,
                                      double half_box_mm = 20.0) {
  std::vector<double> angles;
  const double range = beam == BeamKind::kCone ? 2.0 * kPi : kPi;
  for (int p = 0; p < projections; ++p)
    angles.push_back(range * p / projections);
  // Pixel sizes such that the box's diagonal fits in the detector width (magnified for cone).
  const double width_mm = 2.0 * half_box_mm * 1.5;
  if (beam == BeamKind::kParallel) {
    CircularParallelParams p;
    p.angles_rad = angles;
    p.pixel_width_mm = width_mm / detector.cols;
    p.pixel_height_mm = width_mm / detector.rows;
    return make_parallel_geometry(detector, p);
  }
  CircularConeParams c;
  c.angles_rad = angles;
  c.source_origin_mm = 10.0 * half_box_mm;
  c.origin_detector_mm = 10.0 * half_box_mm;
  c.pixel_width_mm = 2.0 * width_mm / detector.cols;
  c.pixel_height_mm = 2.0 * width_mm / detector.rows;
  c.detector_offset_u_mm = 0.37 * c.pixel_width_mm;  // break the symmetry a little
  return make_cone_geometry(detector, c);
}

inline VolumeBox centered_box(double half_mm) {
  return VolumeBox{{-half_mm, -half_mm, -half_mm}, {half_mm, half_mm, half_mm}};
}

// A smooth random image with structure at several scales: sums of random cosines (filtered
// projections are not white noise, and smooth data make interpolation errors measurable).
inline std::vector<float> smooth_random_image(RandomSource& random, int rows, int cols) {
  std::vector<float> image(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  struct Wave {
    double kx, ky, phase, amplitude;
  };
  std::vector<Wave> waves;
  for (int w = 0; w < 6; ++w) {
    waves.push_back({random.uniform(-0.6, 0.6), random.uniform(-0.6, 0.6),
                     random.uniform(0, 2 * kPi), random.uniform(0.2, 1.0)});
  }
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      double v = 0.3;
      for (const Wave& w : waves)
        v += w.amplitude * std::cos(w.kx * c + w.ky * r + w.phase);
      image[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) +
            static_cast<std::size_t>(c)] = static_cast<float>(v + random.uniform(-0.05, 0.05));
    }
  }
  return image;
}

}  // namespace slicestream::test
