// The fused CUDA preprocessing pass against its CPU twin (cpu::preprocess_rows): every pixel
// type, linear and -log modes, cone and parallel, guard cases, and a frame simulated from the
// analytic phantom.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/preprocess_cpu.hpp"
#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/preprocessor.hpp"
#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace slicestream {
namespace {

using test::RandomSource;

struct Calibration {
  std::vector<float> dark;
  std::vector<float> flat;
};

// Darks around 100, flats around 4000, a few dead pixels (flat <= dark) and a broken dark.
Calibration random_calibration(RandomSource& random, DetectorShape shape) {
  Calibration c;
  c.dark = random.floats(shape.pixels(), 90.0, 110.0);
  c.flat = random.floats(shape.pixels(), 3000.0, 5000.0);
  for (int k = 0; k < 5; ++k) {
    const auto i =
        static_cast<std::size_t>(random.uniform_int(0, static_cast<int>(shape.pixels()) - 1));
    c.flat[i] = c.dark[i] - 1.0f;
  }
  c.dark[shape.pixels() / 2] = std::numeric_limits<float>::quiet_NaN();
  return c;
}

// Raw counts between dark and flat with guard cases planted: at and below the dark level
// (transmission <= 0: clamped) and, for float frames, NaN and infinity.
template <class Pixel>
std::vector<Pixel> random_frame(RandomSource& random, const Calibration& c, bool linear) {
  std::vector<Pixel> raw(c.dark.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const double value = linear ? random.uniform(-2.0, 5.0) : random.uniform(100.0, 4500.0);
    raw[i] = static_cast<Pixel>(std::is_floating_point_v<Pixel> ? value : std::max(0.0, value));
  }
  for (int k = 0; k < 7; ++k) {
    raw[static_cast<std::size_t>(random.uniform_int(0, static_cast<int>(raw.size()) - 1))] = 0;
  }
  if constexpr (std::is_floating_point_v<Pixel>) {
    raw[1] = std::numeric_limits<Pixel>::quiet_NaN();
    raw[raw.size() - 2] = std::numeric_limits<Pixel>::infinity();
  }
  return raw;
}

template <class Pixel>
void check_against_cpu(PixelType type, BeamKind beam, bool linear, DetectorShape shape) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const Calibration c = random_calibration(random, shape);
  const std::vector<Pixel> raw = random_frame<Pixel>(random, c, linear);
  const ScanGeometry geometry = test::circular_geometry(beam, shape, 7);
  const ProjectionVector vector = geometry.vectors[3];
  const CosineWeight cosine = make_cosine_weight(beam, vector, shape);
  PreprocessParams params;
  params.already_linear = linear;
  params.min_transmission = 1e-4f;
  const FrameView frame{raw.data(), type, shape};

  const cpu::PreprocessTables tables = cpu::make_preprocess_tables(shape, c.dark, c.flat);
  std::vector<float> expected(shape.pixels());
  PreprocessCounters cpu_counts;
  cpu::preprocess_rows(frame, tables, params, cosine, expected.data(), 0, shape.rows, &cpu_counts);

  cuda::Stream stream;
  cuda::Preprocessor pre(shape, stream.get());
  pre.set_calibration(c.dark, c.flat, stream.get());
  cuda::DeviceBuffer<float> out(shape.pixels());
  SLICESTREAM_CUDA_CHECK(cudaMemset(out.data(), 0xff, out.bytes()));  // poison: NaN everywhere
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
  pre.run(frame, params, cosine, out.data(), stream.get());
  const std::vector<PreprocessCounters> counts = pre.take_counts(stream.get());
  ASSERT_EQ(counts.size(), 1u);
  const PreprocessCounters gpu_counts = counts[0];
  const std::vector<float> actual = test::to_host(out.data(), out.size());

  for (float v : actual)
    ASSERT_TRUE(std::isfinite(v)) << "unwritten or non-finite output";
  EXPECT_LE(test::relative_error(actual, expected), 1e-5);
  EXPECT_EQ(gpu_counts.non_finite, cpu_counts.non_finite);
  EXPECT_EQ(gpu_counts.clamped_low, cpu_counts.clamped_low);
  if (!linear) {
    EXPECT_GT(cpu_counts.clamped_low, 0u);  // the planted guard cases were exercised
  }
}

TEST(PreprocessCuda, MatchesCpuForEveryPixelTypeAndMode) {
  SLICESTREAM_REQUIRE_GPU();
  for (BeamKind beam : {BeamKind::kCone, BeamKind::kParallel}) {
    for (bool linear : {false, true}) {
      SCOPED_TRACE(std::string(to_string(beam)) + (linear ? " linear" : " -log"));
      check_against_cpu<std::uint16_t>(PixelType::kUint16, beam, linear, {37, 129});
      check_against_cpu<std::uint32_t>(PixelType::kUint32, beam, linear, {64, 100});
      check_against_cpu<float>(PixelType::kFloat32, beam, linear, {1, 333});
    }
  }
}

TEST(PreprocessCuda, OddShapesAndRepeatedFramesThroughTheRing) {
  SLICESTREAM_REQUIRE_GPU();
  // Frames larger than the ring (4 x 1 MiB chunks) and frames back to back without counters:
  // the ring must not overwrite a chunk before its DMA is done.
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{613, 1031};  // 2.5 MB of uint32
  const Calibration c = random_calibration(random, shape);
  const cpu::PreprocessTables tables = cpu::make_preprocess_tables(shape, c.dark, c.flat);
  const ScanGeometry geometry = test::circular_geometry(BeamKind::kCone, shape, 5);
  PreprocessParams params;
  cuda::Stream stream;
  cuda::Preprocessor pre(shape, stream.get());
  pre.set_calibration(c.dark, c.flat, stream.get());
  std::vector<std::vector<std::uint32_t>> frames;
  std::vector<cuda::DeviceBuffer<float>> outputs;
  for (int f = 0; f < 5; ++f) {
    frames.push_back(random_frame<std::uint32_t>(random, c, false));
    outputs.emplace_back(shape.pixels());
    const CosineWeight cosine = make_cosine_weight(BeamKind::kCone, geometry.vectors[f], shape);
    pre.run({frames.back().data(), PixelType::kUint32, shape}, params, cosine,
            outputs.back().data(), stream.get());
  }
  const std::vector<PreprocessCounters> counts = pre.take_counts(stream.get());
  ASSERT_EQ(counts.size(), 5u);
  for (int f = 0; f < 5; ++f) {
    const CosineWeight cosine = make_cosine_weight(BeamKind::kCone, geometry.vectors[f], shape);
    std::vector<float> expected(shape.pixels());
    PreprocessCounters expected_counts;
    cpu::preprocess_rows({frames[f].data(), PixelType::kUint32, shape}, tables, params, cosine,
                         expected.data(), 0, shape.rows, &expected_counts);
    EXPECT_LE(test::relative_error(test::to_host(outputs[f].data(), shape.pixels()), expected),
              1e-5)
        << "frame " << f;
    EXPECT_EQ(counts[static_cast<std::size_t>(f)].clamped_low, expected_counts.clamped_low);
  }
}

TEST(PreprocessCuda, GuardCountsOfManyFramesComeBackInOrder) {
  SLICESTREAM_REQUIRE_GPU();
  // More frames than the device ring holds between two reads: every frame's counts, in order.
  const DetectorShape shape{9, 31};
  const ScanGeometry geometry = test::circular_geometry(BeamKind::kParallel, shape, 3);
  const CosineWeight cosine = make_cosine_weight(BeamKind::kParallel, geometry.vectors[0], shape);
  cuda::Stream stream;
  for (bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "graphs" : "step by step");
    cuda::Preprocessor pre(shape, stream.get(), graphs);
    cuda::DeviceBuffer<float> out(shape.pixels());
    const int frames = 2 * cuda::Preprocessor::kCountRing + 3;
    for (int f = 0; f < frames; ++f) {
      std::vector<std::uint16_t> raw(shape.pixels(), 3000);
      for (int k = 0; k < f % 7; ++k)
        raw[static_cast<std::size_t>(11 * k)] = 0;  // transmission 0: clamped
      pre.run({raw.data(), PixelType::kUint16, shape}, PreprocessParams{}, cosine, out.data(),
              stream.get());
    }
    const std::vector<PreprocessCounters> counts = pre.take_counts(stream.get());
    ASSERT_EQ(counts.size(), static_cast<std::size_t>(frames));
    for (int f = 0; f < frames; ++f) {
      EXPECT_EQ(counts[static_cast<std::size_t>(f)].clamped_low, static_cast<std::uint64_t>(f % 7))
          << "frame " << f;
      EXPECT_EQ(counts[static_cast<std::size_t>(f)].non_finite, 0u);
    }
    EXPECT_TRUE(pre.take_counts(stream.get()).empty());
  }
}

TEST(PreprocessCuda, RecoversPhantomLineIntegrals) {
  SLICESTREAM_REQUIRE_GPU();
  // Transmission frames made from exact line integrals: -log undoes them, the cosine weight
  // multiplies them (cone); the GPU pass must return exactly that.
  const DetectorShape shape{48, 80};
  const ScanGeometry geometry = test::circular_geometry(BeamKind::kCone, shape, 4);
  const auto phantom = phantom::shepp_logan_3d(test::centered_box(20.0), 0.05);
  std::vector<float> integrals(shape.pixels());
  phantom::project(phantom, BeamKind::kCone, geometry.vectors[1], shape, integrals.data());
  std::vector<float> dark(shape.pixels(), 100.0f);
  std::vector<float> flat(shape.pixels(), 4100.0f);
  std::vector<float> raw(shape.pixels());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    raw[i] = 100.0f + 4000.0f * std::exp(-integrals[i]);
  }
  const CosineWeight cosine = make_cosine_weight(BeamKind::kCone, geometry.vectors[1], shape);
  std::vector<double> expected(shape.pixels());
  for (int r = 0; r < shape.rows; ++r) {
    for (int col = 0; col < shape.cols; ++col) {
      const std::size_t i = static_cast<std::size_t>(r * shape.cols + col);
      expected[i] = static_cast<double>(integrals[i]) * cosine.at(r, col);
    }
  }
  cuda::Stream stream;
  cuda::Preprocessor pre(shape, stream.get());
  pre.set_calibration(dark, flat, stream.get());
  cuda::DeviceBuffer<float> out(shape.pixels());
  pre.run({raw.data(), PixelType::kFloat32, shape}, {}, cosine, out.data(), stream.get());
  const std::vector<float> actual = test::to_host(out.data(), out.size());
  EXPECT_GT(test::max_abs(expected), 0.1);  // the phantom is in view
  EXPECT_LE(test::relative_error(actual, expected), 1e-5);
}

}  // namespace
}  // namespace slicestream
