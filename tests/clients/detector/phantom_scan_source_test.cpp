#include "clients/detector/phantom_scan_source.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "clients/detector/moving_inclusion.hpp"

namespace slicestream::detector {
namespace {

constexpr double kPi = 3.14159265358979323846;

// A small scan: 20 x 28 detector, `slots` angles over `arc_rad`.
SimulationConfig small_config(BeamKind beam, int slots, double arc_rad) {
  SimulationConfig c;
  GeometrySpec& g = c.geometry;
  g.beam = beam;
  g.detector = {20, 28};
  g.pixel_width_mm = 1.5;
  g.pixel_height_mm = 1.25;
  if (beam == BeamKind::kCone) {
    g.source_origin_mm = 80;
    g.origin_detector_mm = 40;
  }
  for (int k = 0; k < slots; ++k)
    g.slot_angles_rad.push_back(0.3 + arc_rad * k / slots);
  c.angle_step_rad = arc_rad / slots;
  c.darks = 2;
  c.flats = 3;
  c.threads = 2;
  c.detector.flat_counts = 30000;
  c.detector.dark_counts = 100;
  return c;
}

// The ray through the centre of pixel (row, col), built from the angle with ASTRA's
// conventions written out here (independently of kernels/geometry): returns (point, direction).
std::pair<Vec3, Vec3> astra_ray(const GeometrySpec& g, double angle, int row, int col) {
  const double s = std::sin(angle);
  const double c = std::cos(angle);
  const Vec3 u{c * g.pixel_width_mm, s * g.pixel_width_mm, 0};
  const Vec3 v{0, 0, g.pixel_height_mm};
  const double fu = col - g.detector.cols / 2.0 + 0.5;
  const double fv = row - g.detector.rows / 2.0 + 0.5;
  if (g.beam == BeamKind::kParallel) {
    return {fu * u + fv * v, Vec3{s, -c, 0}};
  }
  const Vec3 source{s * g.source_origin_mm, -c * g.source_origin_mm, 0};
  const Vec3 centre{-s * g.origin_detector_mm, c * g.origin_detector_mm, 0};
  const Vec3 pixel = centre + fu * u + fv * v;
  return {source, pixel - source};
}

// -ln((raw - dark) / (flat - dark)) of one pixel.
double corrected(const OutgoingFrame& raw, const OutgoingFrame& dark, const OutgoingFrame& flat,
                 std::size_t i) {
  const double d = load_pixel(dark.pixels->type, dark.pixels->bytes.data(), i);
  const double f = load_pixel(flat.pixels->type, flat.pixels->bytes.data(), i);
  const double r = load_pixel(raw.pixels->type, raw.pixels->bytes.data(), i);
  return -std::log((r - d) / (f - d));
}

void expect_frames_match_line_integrals(BeamKind beam, PixelType type, double tolerance) {
  SimulationConfig config = small_config(beam, 12, beam == BeamKind::kCone ? 2 * kPi : kPi);
  config.detector.pixel_type = type;
  PhantomScanSource source(config);
  source.prepare();
  ASSERT_TRUE(source.cached());
  const GeometrySpec& g = source.geometry().spec();
  const auto phantom =
      phantom::shepp_logan_3d(source.geometry().volume(), source.outer_attenuation_per_mm());
  const FrameSequence seq = source.sequence();
  const OutgoingFrame dark = source.render(0);
  const OutgoingFrame flat = source.render(seq.darks);
  ASSERT_EQ(dark.kind, FrameKind::kDark);
  ASSERT_EQ(flat.kind, FrameKind::kFlat);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> row(0, g.detector.rows - 1);
  std::uniform_int_distribution<int> col(0, g.detector.cols - 1);
  int inside = 0;
  for (std::uint64_t j : {0, 3, 7, 11}) {
    const OutgoingFrame frame = source.render(seq.darks + seq.flats + j);
    ASSERT_EQ(frame.kind, FrameKind::kProjection);
    ASSERT_EQ(frame.index, j);
    ASSERT_EQ(frame.position, j);
    for (int sample = 0; sample < 40; ++sample) {
      const int r = row(rng);
      const int c = col(rng);
      const auto [point, direction] = astra_ray(g, g.slot_angles_rad[j], r, c);
      const double expected = phantom::line_integral(phantom, point, direction);
      const double got =
          corrected(frame, dark, flat, static_cast<std::size_t>(r) * g.detector.cols + c);
      ASSERT_NEAR(got, expected, tolerance) << "projection " << j << " pixel " << r << "," << c;
      inside += expected > 0.1;
    }
  }
  EXPECT_GT(inside, 40) << "too few sampled rays cross the phantom: the test would prove little";
}

TEST(PhantomScanSource, ParallelFramesAreExactLineIntegralsAfterCorrection) {
  expect_frames_match_line_integrals(BeamKind::kParallel, PixelType::kFloat32, 2e-5);
}

TEST(PhantomScanSource, ConeFramesAreExactLineIntegralsAfterCorrection) {
  expect_frames_match_line_integrals(BeamKind::kCone, PixelType::kFloat32, 2e-5);
}

TEST(PhantomScanSource, Uint16FramesAgreeWithinCountRounding) {
  // Rounding to whole counts moves -ln by at most 0.5 / (I0 e^-p) ~ 1.2e-4 at p = 2.
  expect_frames_match_line_integrals(BeamKind::kCone, PixelType::kUint16, 3e-4);
}

TEST(PhantomScanSource, DefaultAttenuationGivesTheTargetLongestChord) {
  PhantomScanSource source(small_config(BeamKind::kParallel, 4, kPi));
  const auto phantom = phantom::shepp_logan_3d(source.geometry().volume(), 1.0);
  double largest = 0;
  for (const auto& e : phantom) {
    largest = std::max({largest, e.semi_axes_mm.x, e.semi_axes_mm.y, e.semi_axes_mm.z});
  }
  EXPECT_NEAR(source.outer_attenuation_per_mm() * 2 * largest, kDefaultMaxLineIntegral, 1e-12);
}

TEST(PhantomScanSource, RotationsRepeatPositionsCyclically) {
  SimulationConfig config = small_config(BeamKind::kParallel, 6, kPi);
  config.rotations = 3;
  PhantomScanSource source(config);
  source.prepare();
  const FrameSequence seq = source.sequence();
  EXPECT_EQ(seq.projections, 18u);
  EXPECT_EQ(source.distinct_positions(), 6);
  const std::uint64_t first = seq.darks + seq.flats;
  for (std::uint64_t j = 0; j < 18; ++j) {
    const OutgoingFrame frame = source.render(first + j);
    EXPECT_EQ(frame.index, j);
    EXPECT_EQ(frame.position, j % 6);
    EXPECT_FALSE(frame.angle_rad.has_value());
    EXPECT_EQ(frame.pixels->bytes, source.render(first + j % 6).pixels->bytes);
  }
}

TEST(PhantomScanSource, AFrameCountEndsMidRotationAndPrecomputesOnlyWhatIsSent) {
  SimulationConfig config = small_config(BeamKind::kParallel, 6, kPi);
  config.projections = 9;
  PhantomScanSource long_scan(config);
  EXPECT_EQ(long_scan.sequence().projections, 9u);
  EXPECT_EQ(long_scan.distinct_positions(), 6);
  config.projections = 4;
  PhantomScanSource short_scan(config);
  EXPECT_EQ(short_scan.sequence().projections, 4u);
  EXPECT_EQ(short_scan.distinct_positions(), 4);
  ASSERT_TRUE(short_scan.prepare());
  const std::uint64_t first = short_scan.sequence().darks + short_scan.sequence().flats;
  EXPECT_EQ(short_scan.render(first + 3).position, 3u);
}

TEST(PhantomScanSource, UncachedFramesEqualCachedOnes) {
  SimulationConfig config = small_config(BeamKind::kCone, 5, 2 * kPi);
  PhantomScanSource cached(config);
  cached.prepare();
  config.cache_limit_bytes = 0;
  PhantomScanSource uncached(config);
  uncached.prepare();
  ASSERT_TRUE(cached.cached());
  ASSERT_FALSE(uncached.cached());
  for (std::uint64_t frame = 0; frame < cached.sequence().total(); ++frame) {
    EXPECT_EQ(cached.render(frame).pixels->bytes, uncached.render(frame).pixels->bytes) << frame;
  }
}

TEST(PhantomScanSource, RendersWithoutOrAfterACancelledPrecompute) {
  SimulationConfig config = small_config(BeamKind::kParallel, 6, kPi);
  PhantomScanSource reference(config);
  ASSERT_TRUE(reference.prepare());
  PhantomScanSource cancelled(config);
  const std::atomic<bool> stop{true};
  EXPECT_FALSE(cancelled.prepare({}, &stop));
  EXPECT_FALSE(cancelled.prepared());
  PhantomScanSource unprepared(config);
  for (std::uint64_t frame = 0; frame < reference.sequence().total(); ++frame) {
    EXPECT_EQ(cancelled.render(frame).pixels->bytes, reference.render(frame).pixels->bytes);
    EXPECT_EQ(unprepared.render(frame).pixels->bytes, reference.render(frame).pixels->bytes);
  }
}

TEST(PhantomScanSource, AnglePlacementContinuesPastHalfTurnWithMirroredProjections) {
  // Parallel beam over 180 degrees, placed by angle: frame j is at start + j * pi / N, so frame
  // N is half a turn later: the same rays reversed, i.e. frame 0 mirrored left-right.
  SimulationConfig config = small_config(BeamKind::kParallel, 8, kPi);
  config.placement = Placement::kAngle;
  config.rotations = 2;
  config.darks = config.flats = 0;
  config.detector.already_linear = true;
  PhantomScanSource source(config);
  source.prepare();
  EXPECT_EQ(source.distinct_positions(), 16);  // a full turn
  const DetectorShape shape = source.geometry().detector();
  const OutgoingFrame first = source.render(0);
  const OutgoingFrame opposite = source.render(8);
  ASSERT_TRUE(opposite.angle_rad.has_value());
  EXPECT_NEAR(*first.angle_rad, 0.3, 1e-12);
  EXPECT_NEAR(*opposite.angle_rad, 0.3 + kPi, 1e-12);
  double largest = 0;
  for (int r = 0; r < shape.rows; ++r) {
    for (int c = 0; c < shape.cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * shape.cols + c;
      const std::size_t mirrored = static_cast<std::size_t>(r) * shape.cols + (shape.cols - 1 - c);
      const double a = load_pixel(PixelType::kFloat32, first.pixels->bytes.data(), i);
      const double b = load_pixel(PixelType::kFloat32, opposite.pixels->bytes.data(), mirrored);
      ASSERT_NEAR(a, b, 1e-4) << r << "," << c;
      largest = std::max(largest, a);
    }
  }
  EXPECT_GT(largest, 0.5);
  EXPECT_EQ(source.scan_begin().parallel().angles_rad_size(), 8);
}

TEST(PhantomScanSource, DynamicInclusionMovesAndStaysExact) {
  SimulationConfig config = small_config(BeamKind::kCone, 6, 2 * kPi);
  config.dynamic = true;
  config.rotations = 2;
  config.darks = config.flats = 0;
  config.detector.already_linear = true;
  PhantomScanSource source(config);
  source.prepare();
  const GeometrySpec& g = source.geometry().spec();
  for (std::uint64_t j : {1, 7, 11}) {
    const auto phantom = source.phantom_at(j);
    ASSERT_EQ(phantom.size(), 11u);  // the head's ten ellipsoids and the inclusion
    const OutgoingFrame frame = source.render(j);
    for (int r = 0; r < g.detector.rows; r += 3) {
      for (int c = 0; c < g.detector.cols; c += 3) {
        const auto [point, direction] = astra_ray(g, g.slot_angles_rad[j % 6], r, c);
        const double got = load_pixel(PixelType::kFloat32, frame.pixels->bytes.data(),
                                      static_cast<std::size_t>(r) * g.detector.cols + c);
        ASSERT_NEAR(got, phantom::line_integral(phantom, point, direction), 2e-5);
      }
    }
  }
  // Same position, next rotation: the inclusion has moved, so the frame differs.
  const auto a = source.render(1).pixels;
  const auto b = source.render(7).pixels;
  double difference = 0;
  for (std::size_t i = 0; i < a->pixels(); ++i) {
    difference =
        std::max(difference, std::abs(load_pixel(PixelType::kFloat32, a->bytes.data(), i) -
                                      load_pixel(PixelType::kFloat32, b->bytes.data(), i)));
  }
  EXPECT_GT(difference, 1e-2);
  EXPECT_EQ(moving_inclusion(source.geometry().volume(), 1.0, 1.0).attenuation_per_mm, 0.0);
}

TEST(PhantomScanSource, SupersamplingAveragesSubPixelRays) {
  SimulationConfig config = small_config(BeamKind::kParallel, 3, kPi);
  config.supersample = 3;
  config.darks = config.flats = 0;
  config.detector.already_linear = true;
  PhantomScanSource source(config);
  source.prepare();
  const GeometrySpec& g = source.geometry().spec();
  const auto phantom = source.phantom_at(0);
  const OutgoingFrame frame = source.render(1);
  const double angle = g.slot_angles_rad[1];
  const Vec3 u{std::cos(angle) * g.pixel_width_mm, std::sin(angle) * g.pixel_width_mm, 0};
  const Vec3 v{0, 0, g.pixel_height_mm};
  for (int r : {4, 10, 15}) {
    for (int c : {6, 13, 20}) {
      double sum = 0;
      for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) {
          const double fu = c - g.detector.cols / 2.0 + (b + 0.5) / 3;
          const double fv = r - g.detector.rows / 2.0 + (a + 0.5) / 3;
          sum += phantom::line_integral(phantom, fu * u + fv * v,
                                        Vec3{std::sin(angle), -std::cos(angle), 0});
        }
      }
      EXPECT_NEAR(load_pixel(PixelType::kFloat32, frame.pixels->bytes.data(),
                             static_cast<std::size_t>(r) * g.detector.cols + c),
                  sum / 9, 2e-5);
    }
  }
}

TEST(PhantomScanSource, ScanBeginDescribesTheStream) {
  SimulationConfig config = small_config(BeamKind::kCone, 10, 2 * kPi);
  config.detector.pixel_type = PixelType::kUint32;
  config.description = "unit test";
  PhantomScanSource source(config);
  const v1::ScanBegin& sb = source.scan_begin();
  EXPECT_EQ(sb.detector_rows(), 20u);
  EXPECT_EQ(sb.detector_cols(), 28u);
  EXPECT_EQ(sb.pixel_type(), v1::PIXEL_TYPE_UINT32);
  EXPECT_EQ(sb.dark_count(), 2u);
  EXPECT_EQ(sb.flat_count(), 3u);
  EXPECT_EQ(sb.projections_per_rotation(), 10u);
  EXPECT_FALSE(sb.already_linear());
  ASSERT_TRUE(sb.has_cone());
  EXPECT_EQ(sb.cone().angles_rad_size(), 10);
  EXPECT_DOUBLE_EQ(sb.cone().source_origin_mm(), 80);
  EXPECT_EQ(sb.description(), "unit test");
  const FrameSequence seq = source.sequence();
  EXPECT_EQ(seq.total(), 15u);
}

TEST(PhantomScanSource, RejectsInconsistentConfigurations) {
  SimulationConfig linear_with_flats = small_config(BeamKind::kParallel, 4, kPi);
  linear_with_flats.detector.already_linear = true;
  EXPECT_THROW(PhantomScanSource{linear_with_flats}, std::invalid_argument);
  SimulationConfig no_rotations = small_config(BeamKind::kParallel, 4, kPi);
  no_rotations.rotations = 0;
  EXPECT_THROW(PhantomScanSource{no_rotations}, std::invalid_argument);
  SimulationConfig cone_without_distance = small_config(BeamKind::kCone, 4, 2 * kPi);
  cone_without_distance.geometry.source_origin_mm = 0;
  EXPECT_THROW(PhantomScanSource{cone_without_distance}, std::invalid_argument);
}

}  // namespace
}  // namespace slicestream::detector
