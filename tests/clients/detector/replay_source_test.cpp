#include "clients/detector/replay_source.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace slicestream::detector {
namespace {

constexpr double kPi = 3.14159265358979323846;

// An in-memory recording whose pixel values encode (kind, index, pixel), so that every frame the
// replayer sends can be traced back to its source.
class FakeScan final : public RecordedScan {
 public:
  FakeScan(std::size_t darks, std::size_t flats, std::size_t projections,
           std::optional<std::vector<double>> angles = std::nullopt,
           PixelType type = PixelType::kUint32)
      : counts_{darks, flats, projections}, angles_(std::move(angles)), type_(type) {}

  static double value(FrameKind kind, std::size_t index, std::size_t pixel) {
    return 1000000.0 * static_cast<double>(kind) + 1000.0 * static_cast<double>(index) +
           static_cast<double>(pixel);
  }

  DetectorShape shape() const override { return {3, 4}; }
  PixelType pixel_type() const override { return type_; }
  std::size_t count(FrameKind kind) const override { return counts_[static_cast<int>(kind)]; }
  std::optional<std::vector<double>> angles_deg() const override { return angles_; }
  void read(FrameKind kind, std::size_t index, PixelBuffer& out) override {
    if (index >= count(kind)) throw std::out_of_range("fake scan index");
    ++reads;
    out = PixelBuffer(type_, shape());
    for (std::size_t i = 0; i < out.pixels(); ++i) {
      store_pixel(type_, out.bytes.data(), i,
                  type_ == PixelType::kUint16 ? static_cast<double>(i) : value(kind, index, i));
    }
  }
  std::string describe() const override { return "fake"; }

  int reads = 0;

 private:
  std::size_t counts_[3];
  std::optional<std::vector<double>> angles_;
  PixelType type_;
};

std::vector<double> evenly(std::size_t n, double arc_deg) {
  std::vector<double> angles;
  for (std::size_t i = 0; i < n; ++i)
    angles.push_back(arc_deg * static_cast<double>(i) / static_cast<double>(n));
  return angles;
}

void expect_from(const OutgoingFrame& frame, FrameKind kind, std::size_t file_index,
                 bool flipped = false) {
  ASSERT_EQ(frame.kind, kind);
  const DetectorShape shape = frame.pixels->shape;
  for (int r = 0; r < shape.rows; ++r) {
    for (int c = 0; c < shape.cols; ++c) {
      const int source_row = flipped ? shape.rows - 1 - r : r;
      const std::size_t source_pixel = static_cast<std::size_t>(source_row * shape.cols + c);
      ASSERT_EQ(load_pixel(frame.pixels->type, frame.pixels->bytes.data(),
                           static_cast<std::size_t>(r * shape.cols + c)),
                FakeScan::value(kind, file_index, source_pixel));
    }
  }
}

TEST(ReplaySource, SendsDarksFlatsThenProjectionsWithTheFileAngles) {
  const std::vector<double> angles = {0, 30, 60, 90, 120, 150};
  ReplaySource replay(std::make_unique<FakeScan>(2, 3, 6, angles), {});
  const FrameSequence seq = replay.sequence();
  EXPECT_EQ(seq.darks, 2u);
  EXPECT_EQ(seq.flats, 3u);
  EXPECT_EQ(seq.projections, 6u);
  expect_from(replay.render(1), FrameKind::kDark, 1);
  expect_from(replay.render(4), FrameKind::kFlat, 2);
  for (std::uint64_t j = 0; j < 6; ++j) {
    const OutgoingFrame frame = replay.render(5 + j);
    expect_from(frame, FrameKind::kProjection, j);
    EXPECT_EQ(frame.index, j);
    EXPECT_EQ(frame.position, j);
  }
  const v1::ScanBegin& sb = replay.scan_begin();
  ASSERT_TRUE(sb.has_parallel());
  ASSERT_EQ(sb.parallel().angles_rad_size(), 6);
  EXPECT_NEAR(sb.parallel().angles_rad(3), kPi / 2, 1e-12);
  EXPECT_EQ(sb.pixel_type(), v1::PIXEL_TYPE_UINT32);
  EXPECT_EQ(sb.dark_count(), 2u);
  EXPECT_EQ(sb.flat_count(), 3u);
  EXPECT_EQ(sb.projections_per_rotation(), 6u);
  EXPECT_EQ(sb.detector_rows(), 3u);
  EXPECT_TRUE(replay.warnings().empty());
}

TEST(ReplaySource, FlipsRowsOfEveryFrame) {
  ReplayConfig config;
  config.flip_rows = true;
  ReplaySource replay(std::make_unique<FakeScan>(1, 1, 2), config);
  expect_from(replay.render(0), FrameKind::kDark, 0, true);
  expect_from(replay.render(1), FrameKind::kFlat, 0, true);
  expect_from(replay.render(3), FrameKind::kProjection, 1, true);
}

TEST(ReplaySource, AnglesFromFlagsOrSpreadOverTheArc) {
  ReplayConfig config;
  config.arc_deg = 360;
  config.geometry.beam = BeamKind::kCone;
  config.geometry.source_origin_mm = 100;
  config.geometry.origin_detector_mm = 50;
  ReplaySource spread(std::make_unique<FakeScan>(0, 1, 8), config);
  ASSERT_TRUE(spread.scan_begin().has_cone());
  EXPECT_NEAR(spread.scan_begin().cone().angles_rad(2), kPi / 2, 1e-12);

  config.angles_deg = std::vector<double>{5, 50, 95, 140, 185, 230, 275, 320};
  ReplaySource listed(std::make_unique<FakeScan>(0, 1, 8, evenly(8, 180)), config);
  EXPECT_NEAR(listed.scan_begin().cone().angles_rad(1), 50 * kPi / 180, 1e-12);

  std::vector<double> with_nan = evenly(8, 180);
  with_nan[5] = std::nan("");
  EXPECT_THROW(ReplaySource(std::make_unique<FakeScan>(0, 1, 8, with_nan), {}),
               std::invalid_argument);

  config.angles_deg = std::vector<double>{1, 2, 3};
  EXPECT_THROW(ReplaySource(std::make_unique<FakeScan>(0, 1, 8), config), std::invalid_argument);
}

TEST(ReplaySource, WindowShorterThanTheScanCyclesThroughSlots) {
  // Two full turns recorded continuously (0..720 degrees), window one turn of 4.
  ReplayConfig config;
  config.projections_per_rotation = 4;
  ReplaySource replay(std::make_unique<FakeScan>(0, 1, 8, evenly(8, 720)), config);
  EXPECT_EQ(replay.scan_begin().projections_per_rotation(), 4u);
  for (std::uint64_t j = 0; j < 8; ++j) {
    const OutgoingFrame frame = replay.render(1 + j);
    EXPECT_EQ(frame.position, j % 4);
    expect_from(frame, FrameKind::kProjection, j);
  }
  EXPECT_TRUE(replay.warnings().empty());

  // Angles that do not repeat per window: the user is told, and angle placement fixes it.
  ReplaySource drifting(std::make_unique<FakeScan>(0, 1, 8, evenly(8, 500)), config);
  ASSERT_EQ(drifting.warnings().size(), 1u);
  EXPECT_NE(drifting.warnings()[0].find("--placement angle"), std::string::npos);
  config.placement = Placement::kAngle;
  ReplaySource by_angle(std::make_unique<FakeScan>(0, 1, 8, evenly(8, 500)), config);
  const OutgoingFrame frame = by_angle.render(1 + 5);
  ASSERT_TRUE(frame.angle_rad.has_value());
  EXPECT_NEAR(*frame.angle_rad, 500.0 * 5 / 8 * kPi / 180, 1e-12);
}

TEST(ReplaySource, RepeatContinuesIndicesOverTheSameFrames) {
  ReplayConfig config;
  config.repeat = 3;
  auto scan = std::make_unique<FakeScan>(1, 1, 5);
  FakeScan* raw = scan.get();
  ReplaySource replay(std::move(scan), config);
  EXPECT_EQ(replay.sequence().projections, 15u);
  for (std::uint64_t j = 0; j < 15; ++j) {
    const OutgoingFrame frame = replay.render(2 + j);
    EXPECT_EQ(frame.index, j);
    EXPECT_EQ(frame.position, j % 5);
    expect_from(frame, FrameKind::kProjection, j % 5);
  }
  EXPECT_EQ(raw->reads, 15);  // read frame by frame, never cached wholesale

  config.projections_per_rotation = 2;  // 5 projections are not whole windows of 2
  EXPECT_THROW(ReplaySource(std::make_unique<FakeScan>(1, 1, 5), config), std::invalid_argument);
}

TEST(ReplaySource, AlreadyLinearNeedsFloatsAndSkipsCalibration) {
  ReplayConfig config;
  config.already_linear = true;
  EXPECT_THROW(
      ReplaySource(std::make_unique<FakeScan>(1, 1, 4, std::nullopt, PixelType::kUint16), config),
      std::invalid_argument);
  ReplaySource replay(std::make_unique<FakeScan>(2, 2, 4, std::nullopt, PixelType::kFloat32),
                      config);
  EXPECT_EQ(replay.sequence().darks, 0u);
  EXPECT_EQ(replay.sequence().flats, 0u);
  EXPECT_TRUE(replay.scan_begin().already_linear());
  EXPECT_EQ(replay.scan_begin().pixel_type(), v1::PIXEL_TYPE_FLOAT32);
  ASSERT_EQ(replay.warnings().size(), 1u);
  EXPECT_NE(replay.warnings()[0].find("skipping"), std::string::npos);
  expect_from(replay.render(0), FrameKind::kProjection, 0);
}

TEST(ReplaySource, RawCountsWithoutFlatsAreFlagged) {
  ReplaySource replay(std::make_unique<FakeScan>(0, 0, 4), {});
  ASSERT_EQ(replay.warnings().size(), 1u);
  EXPECT_NE(replay.warnings()[0].find("no flats"), std::string::npos);
}

// ASTRA parallel3d_vec vectors of `count` projections over 180 degrees, 1 mm pixels.
std::vector<double> parallel_vectors(std::size_t count) {
  std::vector<double> vectors;
  for (std::size_t i = 0; i < count; ++i) {
    const double a = kPi * static_cast<double>(i) / static_cast<double>(count);
    const double v[12] = {std::sin(a), -std::cos(a), 0, 0, 0, 0,
                          std::cos(a), std::sin(a),  0, 0, 0, 1};
    vectors.insert(vectors.end(), v, v + 12);
  }
  return vectors;
}

ReplayConfig vector_config(std::vector<double> vectors) {
  ReplayConfig config;
  config.geometry.vectors = std::move(vectors);
  config.geometry.volume = VolumeBox{{-2, -2, -2}, {2, 2, 2}};
  return config;
}

// Vectors follow the angles' rule: one per projection of the recording. Fewer (or more) vectors
// than projections are an error, as a short angles file is, instead of cycling silently.
TEST(ReplaySource, VectorsAreOnePerProjectionLikeAngles) {
  const std::string vectors_error = [] {
    try {
      ReplaySource(std::make_unique<FakeScan>(0, 1, 8), vector_config(parallel_vectors(4)));
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  }();
  EXPECT_NE(vectors_error.find("4 vectors but the scan has 8 projections"), std::string::npos)
      << vectors_error;
  ReplayConfig short_angles;
  short_angles.angles_deg = evenly(4, 180);
  EXPECT_THROW(ReplaySource(std::make_unique<FakeScan>(0, 1, 8), short_angles),
               std::invalid_argument);

  ReplaySource exact(std::make_unique<FakeScan>(0, 1, 8), vector_config(parallel_vectors(8)));
  EXPECT_EQ(exact.scan_begin().projections_per_rotation(), 8u);
  EXPECT_EQ(exact.scan_begin().vectors().vectors_size(), 8 * 12);
}

// A window of N over the recording takes the first N vectors as its slots, and says when the
// vectors of later projections differ from their slot's (frames are placed by slot).
TEST(ReplaySource, VectorWindowTakesTheFirstVectorsAndChecksTheRest) {
  std::vector<double> two_turns = parallel_vectors(4);
  const std::vector<double> again = two_turns;
  two_turns.insert(two_turns.end(), again.begin(), again.end());
  ReplayConfig config = vector_config(two_turns);
  config.projections_per_rotation = 4;
  ReplaySource replay(std::make_unique<FakeScan>(0, 1, 8), config);
  EXPECT_EQ(replay.scan_begin().projections_per_rotation(), 4u);
  EXPECT_EQ(replay.scan_begin().vectors().vectors_size(), 4 * 12);
  EXPECT_TRUE(replay.warnings().empty());

  ReplayConfig drifting = vector_config(parallel_vectors(8));
  drifting.projections_per_rotation = 4;
  ReplaySource warned(std::make_unique<FakeScan>(0, 1, 8), drifting);
  ASSERT_EQ(warned.warnings().size(), 1u);
  EXPECT_NE(warned.warnings()[0].find("4 projections"), std::string::npos) << warned.warnings()[0];
}

TEST(ReplaySource, AnglePlacementNeedsACircularGeometry) {
  ReplayConfig config;
  config.placement = Placement::kAngle;
  config.geometry.detector_offset_u_mm = 2;  // parallel beam with offset: sent as vectors
  EXPECT_THROW(ReplaySource(std::make_unique<FakeScan>(0, 1, 4), config), std::invalid_argument);
}

}  // namespace
}  // namespace slicestream::detector
