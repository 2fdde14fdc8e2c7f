// The fused preprocessing pass against a float64 reference: every pixel type, log and linear
// modes, FDK cosine weighting, each guard class with exact counters, row ranges and bad input.
#include "kernels/cpu/preprocess_cpu.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/geometry.hpp"
#include "tests/kernels/test_support.hpp"

namespace slicestream::cpu {
namespace {

using test::RandomSource;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Calibration {
  std::vector<float> dark;
  std::vector<float> flat;
};

Calibration random_calibration(RandomSource& random, DetectorShape shape, double dark_level,
                               double flat_level) {
  Calibration c;
  c.dark = random.floats(shape.pixels(), 0.9 * dark_level, 1.1 * dark_level);
  c.flat = random.floats(shape.pixels(), 0.9 * flat_level, 1.1 * flat_level);
  return c;
}

// D / |P - s| computed from the projection vector directly (not through CosineWeight).
double reference_cosine(const ProjectionVector& vec, DetectorShape shape, int row, int col) {
  const Vec3 normal = cross(vec.u, vec.v);
  const Vec3 e = (1.0 / norm(normal)) * normal;
  const double source_detector = std::abs(dot(e, vec.detector_center - vec.source_or_ray));
  const Vec3 pixel = vec.detector_center + (col - 0.5 * shape.cols + 0.5) * vec.u +
                     (row - 0.5 * shape.rows + 0.5) * vec.v;
  return source_detector / norm(pixel - vec.source_or_ray);
}

struct Reference {
  std::vector<double> values;
  PreprocessCounters counters;
};

// The specification in float64: dead (flat <= dark or broken calibration) -> 0; non-finite input
// or result -> 0 and counted; transmission <= min_t clamped (counted) before -log.
template <class Pixel>
Reference reference_preprocess(const std::vector<Pixel>& raw, DetectorShape shape,
                               const Calibration& cal, const PreprocessParams& params,
                               const ProjectionVector* cone_vector) {
  Reference ref;
  ref.values.resize(shape.pixels());
  for (int r = 0; r < shape.rows; ++r) {
    for (int c = 0; c < shape.cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r * shape.cols + c);
      const double value = static_cast<double>(raw[i]);
      const double dark = cal.dark.empty() ? 0.0 : cal.dark[i];
      const double gain = cal.flat.empty() ? 1.0 : cal.flat[i] - dark;
      const bool dead = !std::isfinite(dark) || !(gain > 0) || !std::isfinite(gain);
      const double weight = cone_vector ? reference_cosine(*cone_vector, shape, r, c) : 1.0;
      double result;
      if (params.already_linear) {
        result = weight * value;
      } else {
        double t = (value - dark) / gain;
        // The output is float: a transmission beyond float range overflows there.
        if (std::abs(t) > std::numeric_limits<float>::max()) t = t > 0 ? kInf : -kInf;
        if (!dead && std::isfinite(value) && t <= params.min_transmission) {
          ++ref.counters.clamped_low;
        }
        result = weight * -std::log(std::max(t, static_cast<double>(params.min_transmission)));
      }
      // A dead pixel outputs 0; only its input can be non-finite.
      if (!std::isfinite(value) || (!dead && !std::isfinite(result))) {
        ++ref.counters.non_finite;
      }
      ref.values[i] = dead || !std::isfinite(value) || !std::isfinite(result) ? 0.0 : result;
    }
  }
  return ref;
}

template <class Pixel>
std::vector<float> run_preprocess(const std::vector<Pixel>& raw, PixelType type,
                                  DetectorShape shape, const Calibration& cal,
                                  const PreprocessParams& params, const CosineWeight& cosine,
                                  PreprocessCounters* counters) {
  const PreprocessTables tables = make_preprocess_tables(shape, cal.dark, cal.flat);
  const FrameView frame{raw.data(), type, shape};
  std::vector<float> out(shape.pixels(), std::numeric_limits<float>::quiet_NaN());
  // Two row ranges, as two workers would run them.
  const int middle = shape.rows / 3;
  preprocess_rows(frame, tables, params, cosine, out.data(), 0, middle, counters);
  preprocess_rows(frame, tables, params, cosine, out.data(), middle, shape.rows, counters);
  return out;
}

ProjectionVector random_cone_vector(RandomSource& random) {
  CircularConeParams p;
  p.source_origin_mm = random.uniform(200, 400);
  p.origin_detector_mm = random.uniform(100, 300);
  p.pixel_width_mm = random.uniform(0.1, 0.3);
  p.pixel_height_mm = random.uniform(0.1, 0.3);
  p.detector_offset_u_mm = random.uniform(-5, 5);
  p.detector_offset_v_mm = random.uniform(-5, 5);
  return cone_vector(random.uniform(0, 6.28), p);
}

void expect_matches(const std::vector<float>& out, const Reference& ref,
                    const PreprocessCounters& counters, double tolerance) {
  EXPECT_LT(test::relative_error(out, ref.values), tolerance);
  EXPECT_EQ(counters.clamped_low, ref.counters.clamped_low);
  EXPECT_EQ(counters.non_finite, ref.counters.non_finite);
}

TEST(PreprocessCpu, Uint16ConeMatchesFloat64Reference) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{37, 61};
  const Calibration cal = random_calibration(random, shape, 100, 40000);
  std::vector<std::uint16_t> raw(shape.pixels());
  for (auto& v : raw)
    v = static_cast<std::uint16_t>(random.uniform_int(0, 45000));
  // Every 16th pixel below the lowest dark level, so the clamp is exercised on every seed.
  for (std::size_t i = 0; i < raw.size(); i += 16)
    raw[i] = static_cast<std::uint16_t>(random.uniform_int(0, 80));
  const ProjectionVector vec = random_cone_vector(random);
  const CosineWeight cosine = make_cosine_weight(BeamKind::kCone, vec, shape);
  PreprocessParams params;
  PreprocessCounters counters;
  const auto out = run_preprocess(raw, PixelType::kUint16, shape, cal, params, cosine, &counters);
  const Reference ref = reference_preprocess(raw, shape, cal, params, &vec);
  expect_matches(out, ref, counters, 2e-6);
  EXPECT_GE(counters.clamped_low, raw.size() / 16);
}

TEST(PreprocessCpu, Uint32ParallelMatchesFloat64Reference) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{23, 300};  // wider than one evaluation tile
  const Calibration cal = random_calibration(random, shape, 1000, 3e6);
  std::vector<std::uint32_t> raw(shape.pixels());
  for (auto& v : raw)
    v = static_cast<std::uint32_t>(random.uniform_int(500, 3500000));
  const CosineWeight cosine =
      make_cosine_weight(BeamKind::kParallel, parallel_vector(0.3, 1, 1), shape);
  PreprocessParams params;
  params.min_transmission = 1e-3f;
  PreprocessCounters counters;
  const auto out = run_preprocess(raw, PixelType::kUint32, shape, cal, params, cosine, &counters);
  const Reference ref = reference_preprocess(raw, shape, cal, params, nullptr);
  expect_matches(out, ref, counters, 2e-6);
}

TEST(PreprocessCpu, Float32GuardsEachClassAndCountsIt) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{16, 40};
  Calibration cal = random_calibration(random, shape, 10, 1000);
  std::vector<float> raw = random.floats(shape.pixels(), 20, 1100);
  const float inf = std::numeric_limits<float>::infinity();
  raw[3] = std::numeric_limits<float>::quiet_NaN();  // non-finite inputs
  raw[50] = inf;
  raw[77] = -inf;
  raw[100] = 0.0f;           // below dark: negative transmission, clamped
  raw[101] = cal.dark[101];  // exactly dark: zero transmission, clamped
  raw[102] = -5.0f;
  raw[103] = 3e38f;  // finite input, overflowing transmission -> -log(inf): non-finite result
  cal.flat[200] = cal.dark[200];                            // dead: flat == dark
  cal.flat[201] = cal.dark[201] - 1;                        // dead: flat < dark
  cal.flat[202] = std::numeric_limits<float>::quiet_NaN();  // dead: broken flat
  cal.dark[203] = inf;                                      // dead: broken dark
  raw[200] = std::numeric_limits<float>::quiet_NaN();       // NaN on a dead pixel is still counted
  cal.dark[103] = 0.0f;
  cal.flat[103] = 1e-3f;  // gain 1000: 3e38 * 1000 overflows
  const ProjectionVector vec = random_cone_vector(random);
  const CosineWeight cosine = make_cosine_weight(BeamKind::kCone, vec, shape);
  PreprocessParams params;
  PreprocessCounters counters;
  const auto out = run_preprocess(raw, PixelType::kFloat32, shape, cal, params, cosine, &counters);
  const Reference ref = reference_preprocess(raw, shape, cal, params, &vec);
  expect_matches(out, ref, counters, 2e-6);
  EXPECT_EQ(counters.non_finite, 5u);  // NaN, +inf, -inf, overflow, NaN on a dead pixel
  EXPECT_EQ(counters.clamped_low, 3u);
  for (std::size_t i : {3, 50, 77, 103, 200, 201, 202, 203})
    EXPECT_EQ(out[i], 0.0f) << i;
  const float clamped = static_cast<float>(-std::log(1e-6) * reference_cosine(vec, shape, 2, 20));
  EXPECT_NEAR(out[100], clamped, 1e-5);
  for (float v : out)
    EXPECT_TRUE(std::isfinite(v));
}

TEST(PreprocessCpu, AlreadyLinearSkipsLogButKeepsGuardsAndWeights) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{11, 29};
  std::vector<float> raw = random.floats(shape.pixels(), -1, 4);
  raw[7] = std::numeric_limits<float>::infinity();
  Calibration cal;  // no darks or flats
  PreprocessParams params;
  params.already_linear = true;
  params.min_transmission = 0;  // unused in linear mode
  for (bool cone : {false, true}) {
    const ProjectionVector vec = random_cone_vector(random);
    const CosineWeight cosine =
        make_cosine_weight(cone ? BeamKind::kCone : BeamKind::kParallel, vec, shape);
    PreprocessCounters counters;
    const auto out =
        run_preprocess(raw, PixelType::kFloat32, shape, cal, params, cosine, &counters);
    const Reference ref = reference_preprocess(raw, shape, cal, params, cone ? &vec : nullptr);
    expect_matches(out, ref, counters, 1e-6);
    EXPECT_EQ(counters.non_finite, 1u);
    EXPECT_EQ(counters.clamped_low, 0u);
  }
}

TEST(PreprocessCpu, MissingCalibrationMeansZeroDarkAndUnitGain) {
  const DetectorShape shape{2, 3};
  const PreprocessTables tables = make_preprocess_tables(shape, {}, {});
  EXPECT_EQ(tables.dark, std::vector<float>(6, 0.0f));
  EXPECT_EQ(tables.inv_gain, std::vector<float>(6, 1.0f));
  const std::vector<float> raw = {1.0f, 0.5f, 0.25f, 2.0f, 1e-9f, 0.1f};
  std::vector<float> out(6);
  CosineWeight none{};
  PreprocessCounters counters;
  preprocess_rows({raw.data(), PixelType::kFloat32, shape}, tables, PreprocessParams{}, none,
                  out.data(), 0, 2, &counters);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(out[i], -std::log(std::max(raw[i], 1e-6f)), 1e-6) << i;
  }
  EXPECT_EQ(counters.clamped_low, 1u);
  // Only darks: flats default to gain 1.
  const PreprocessTables dark_only = make_preprocess_tables(shape, std::vector<float>(6, 2.0f), {});
  EXPECT_EQ(dark_only.dark[4], 2.0f);
  EXPECT_EQ(dark_only.inv_gain[4], 1.0f);
}

TEST(PreprocessCpu, RowRangesWriteOnlyTheirRows) {
  const DetectorShape shape{6, 5};
  const PreprocessTables tables = make_preprocess_tables(shape, {}, {});
  const std::vector<std::uint16_t> raw(shape.pixels(), 1);
  std::vector<float> out(shape.pixels(), -3.0f);
  CosineWeight none{};
  preprocess_rows({raw.data(), PixelType::kUint16, shape}, tables, PreprocessParams{}, none,
                  out.data(), 2, 4, nullptr);  // counters are optional
  for (int r = 0; r < shape.rows; ++r) {
    for (int c = 0; c < shape.cols; ++c) {
      EXPECT_EQ(out[static_cast<std::size_t>(r * 5 + c)], r >= 2 && r < 4 ? 0.0f : -3.0f);
    }
  }
}

TEST(PreprocessCpu, RejectsInconsistentInput) {
  const DetectorShape shape{4, 4};
  EXPECT_THROW(make_preprocess_tables(shape, std::vector<float>(15), {}), std::invalid_argument);
  EXPECT_THROW(make_preprocess_tables(shape, {}, std::vector<float>(17)), std::invalid_argument);
  EXPECT_THROW(make_preprocess_tables({0, 4}, {}, {}), std::invalid_argument);
  const PreprocessTables tables = make_preprocess_tables(shape, {}, {});
  const std::vector<float> raw(16, 1.0f);
  std::vector<float> out(16);
  CosineWeight none{};
  const FrameView frame{raw.data(), PixelType::kFloat32, shape};
  EXPECT_THROW(preprocess_rows({raw.data(), PixelType::kFloat32, {2, 8}}, tables, {}, none,
                               out.data(), 0, 2, nullptr),
               std::invalid_argument);
  EXPECT_THROW(preprocess_rows(frame, tables, {}, none, out.data(), 0, 5, nullptr),
               std::invalid_argument);
  EXPECT_THROW(preprocess_rows(frame, tables, {}, none, out.data(), 3, 2, nullptr),
               std::invalid_argument);
  PreprocessParams bad;
  bad.min_transmission = 0;
  EXPECT_THROW(preprocess_rows(frame, tables, bad, none, out.data(), 0, 4, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace slicestream::cpu
