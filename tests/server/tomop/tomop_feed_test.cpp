// TomopFeed on its own: the data direction of tomop becomes the native scan model, and every
// malformed or out-of-order packet is refused with its reason before anything is allocated.
#include <gtest/gtest.h>

#include <memory>

#include "server/tomop/tomop_codec.hpp"
#include "server/tomop/tomop_feed.hpp"

namespace slicestream {
namespace {

using namespace tomop;

struct Sent {
  std::shared_ptr<std::vector<std::byte>> bytes;
  TomopFeed::Outcome outcome;
};

Sent feed(TomopFeed& f, const Packet& packet) {
  auto bytes = std::make_shared<std::vector<std::byte>>(encode(packet));
  std::shared_ptr<const std::byte> shared(bytes, bytes->data());
  return {bytes, f.handle(shared, bytes->size(), 42)};
}

std::string refusal(TomopFeed& f, const Packet& packet) {
  const Sent sent = feed(f, packet);
  EXPECT_FALSE(sent.outcome.message.has_value());
  return sent.outcome.refused ? sent.outcome.refused->reason : "accepted";
}

const std::vector<float> kAngles = {0.0f, 0.5f, 1.0f, 1.5f};

void start_parallel(TomopFeed& f, int darks = 2, int flats = 3) {
  ASSERT_FALSE(feed(f, ScanSettings{0, darks, flats, false, true}).outcome.refused);
  ASSERT_FALSE(feed(f, GeometrySpecification{0, {-4, -4, -2}, {4, 4, 2}}).outcome.refused);
  const Sent begin = feed(f, ParallelBeamGeometry{0, 4, 8, 4, FloatView::of(kAngles)});
  ASSERT_TRUE(begin.outcome.message.has_value())
      << (begin.outcome.refused ? begin.outcome.refused->message : "");
}

TEST(TomopFeed, AParallelScanBecomesANativeScanBegin) {
  TomopFeed f{WireLimits{}};
  ASSERT_FALSE(feed(f, ScanSettings{0, 2, 3, false, true}).outcome.refused);
  ASSERT_FALSE(feed(f, GeometrySpecification{0, {-4, -4, -2}, {4, 4, 2}}).outcome.refused);
  const Sent sent = feed(f, ParallelBeamGeometry{0, 4, 8, 4, FloatView::of(kAngles)});
  ASSERT_TRUE(sent.outcome.message.has_value());
  const auto& begin = std::get<ScanBegin>(*sent.outcome.message);
  const ScanDescription& scan = begin.scan;
  EXPECT_EQ(scan.scan_id, TomopFeed::kFirstScanId);
  EXPECT_EQ(f.active_scan_id(), TomopFeed::kFirstScanId);
  EXPECT_EQ(scan.geometry.detector, (DetectorShape{4, 8}));
  EXPECT_EQ(scan.pixel_type, PixelType::kFloat32);
  EXPECT_EQ(scan.dark_count, 2);
  EXPECT_EQ(scan.flat_count, 3);
  EXPECT_FALSE(scan.already_linear);
  EXPECT_EQ(scan.volume.min_mm.x, -4);
  EXPECT_EQ(scan.volume.max_mm.z, 2);
  ASSERT_EQ(scan.projections_per_rotation(), 4);
  // SliceRecon's units: 1 x 1 detector pixels, ASTRA's angles.
  for (std::size_t i = 0; i < kAngles.size(); ++i) {
    const ProjectionVector expected = parallel_vector(kAngles[i], 1, 1);
    const ProjectionVector& got = scan.geometry.vectors[i];
    EXPECT_NEAR(got.source_or_ray.x, expected.source_or_ray.x, 1e-6);
    EXPECT_NEAR(got.source_or_ray.y, expected.source_or_ray.y, 1e-6);
    EXPECT_NEAR(got.u.x, expected.u.x, 1e-6);
    EXPECT_NEAR(norm(got.v), 1, 1e-9);
  }
  EXPECT_EQ(begin.arrival_ns, 42u);
}

TEST(TomopFeed, ConeBeamTakesDetectorSizeAsThePixelSpacing) {
  TomopFeed f{WireLimits{}};
  ASSERT_FALSE(feed(f, GeometrySpecification{0, {-4, -4, -2}, {4, 4, 2}}).outcome.refused);
  const Sent sent =
      feed(f, ConeBeamGeometry{0, 4, 8, 4, 100, 50, {0.5f, 0.25f}, FloatView::of(kAngles)});
  ASSERT_TRUE(sent.outcome.message.has_value());
  const ScanDescription& scan = std::get<ScanBegin>(*sent.outcome.message).scan;
  EXPECT_EQ(scan.geometry.beam, BeamKind::kCone);
  const ProjectionVector& v0 = scan.geometry.vectors[0];
  EXPECT_NEAR(norm(v0.u), 0.5, 1e-6);
  EXPECT_NEAR(norm(v0.v), 0.25, 1e-6);
  EXPECT_NEAR(norm(v0.source_or_ray), 100, 1e-4);
  EXPECT_NEAR(norm(v0.detector_center), 50, 1e-4);
}

TEST(TomopFeed, VectorGeometriesAreTakenAsTheyCome) {
  TomopFeed f{WireLimits{}};
  ASSERT_FALSE(feed(f, GeometrySpecification{0, {-4, -4, -2}, {4, 4, 2}}).outcome.refused);
  const std::vector<float> vectors = {0,  -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1,
                                      -1, 0,  0, 0, 0, 0, 0, 1, 0, 0, 0, 1};
  const Sent sent = feed(f, ParallelVecGeometry{0, 4, 8, 2, FloatView::of(vectors)});
  ASSERT_TRUE(sent.outcome.message.has_value());
  const ScanDescription& scan = std::get<ScanBegin>(*sent.outcome.message).scan;
  EXPECT_EQ(scan.projections_per_rotation(), 2);
  EXPECT_EQ(scan.geometry.vectors[1].source_or_ray.x, -1);
  EXPECT_EQ(refusal(f, ConeVecGeometry{0, 4, 8, 3, FloatView::of(vectors)}), "bad_geometry");
}

TEST(TomopFeed, ProjectionsKeepTheirPixelsInTheMessageAndCycleThroughTheSlots) {
  TomopFeed f{WireLimits{}};
  start_parallel(f);
  const std::vector<float> pixels(32, 0.5f);
  const Sent sent = feed(f, Projection{Projection::kStandard, 9, {4, 8}, FloatView::of(pixels)});
  ASSERT_TRUE(sent.outcome.message.has_value());
  const auto& frame = std::get<RawFrame>(*sent.outcome.message);
  EXPECT_EQ(frame.kind, FrameKind::kProjection);
  EXPECT_EQ(frame.index, 9u);
  EXPECT_EQ(frame.position, 1u);                            // 9 mod 4
  EXPECT_EQ(frame.payload.get(), sent.bytes->data() + 24);  // not copied
  EXPECT_EQ(frame.payload_bytes, 32 * sizeof(float));
  EXPECT_EQ(frame.pixel_type, PixelType::kFloat32);
  const Sent dark = feed(f, Projection{Projection::kDark, 1, {4, 8}, FloatView::of(pixels)});
  ASSERT_TRUE(dark.outcome.message.has_value());
  const auto& d = std::get<RawFrame>(*dark.outcome.message);
  EXPECT_EQ(d.kind, FrameKind::kDark);
  EXPECT_EQ(d.index, 1u);
  EXPECT_FALSE(d.position.has_value());
}

TEST(TomopFeed, MalformedAndOutOfOrderPacketsAreRefusedWithTheirReason) {
  TomopFeed f{WireLimits{}};
  const std::vector<float> pixels(32, 1.0f);
  EXPECT_EQ(refusal(f, Projection{2, 0, {4, 8}, FloatView::of(pixels)}), "no_active_scan");
  EXPECT_EQ(refusal(f, ParallelBeamGeometry{0, 4, 8, 4, FloatView::of(kAngles)}), "no_volume");
  EXPECT_EQ(refusal(f, GeometrySpecification{0, {1, -4, -2}, {-1, 4, 2}}), "bad_volume");
  EXPECT_EQ(refusal(f, ScanSettings{0, -1, 0, false, true}), "bad_value");
  ASSERT_FALSE(feed(f, GeometrySpecification{0, {-4, -4, -2}, {4, 4, 2}}).outcome.refused);
  EXPECT_EQ(refusal(f, ParallelBeamGeometry{0, 0, 8, 4, FloatView::of(kAngles)}), "bad_shape");
  EXPECT_EQ(refusal(f, ParallelBeamGeometry{0, 4, 8, 5, FloatView::of(kAngles)}), "bad_geometry");
  EXPECT_EQ(refusal(f, ParallelBeamGeometry{0, 4, 8, -4, FloatView::of(kAngles)}), "bad_geometry");
  EXPECT_EQ(refusal(f, ParallelBeamGeometry{0, 40000, 8, 4, FloatView::of(kAngles)}), "oversized");
  const std::vector<float> nan_angles = {0.0f, NAN, 1.0f, 1.5f};
  EXPECT_EQ(refusal(f, ParallelBeamGeometry{0, 4, 8, 4, FloatView::of(nan_angles)}), "non_finite");
  ASSERT_FALSE(feed(f, ScanSettings{0, 1, 1, true, true}).outcome.refused);
  EXPECT_EQ(refusal(f, ParallelBeamGeometry{0, 4, 8, 4, FloatView::of(kAngles)}), "bad_value");
  EXPECT_EQ(f.active_scan_id(), 0u) << "no refused geometry starts a scan";

  start_parallel(f);
  EXPECT_EQ(refusal(f, Projection{2, 0, {8, 4}, FloatView::of(pixels)}), "shape_mismatch");
  const std::vector<float> short_pixels(31, 1.0f);
  EXPECT_EQ(refusal(f, Projection{2, 0, {4, 8}, FloatView::of(short_pixels)}), "bad_payload_size");
  EXPECT_EQ(refusal(f, Projection{3, 0, {4, 8}, FloatView::of(pixels)}), "bad_frame_kind");
  EXPECT_EQ(refusal(f, Projection{2, -1, {4, 8}, FloatView::of(pixels)}), "index_out_of_range");
  EXPECT_EQ(refusal(f, SliceData{0, 0, {8, 4}, FloatView::of(pixels), false}),
            "unsupported_packet");
  EXPECT_EQ(refusal(f, MakeScene{"x", 3}), "unsupported_packet");
  auto garbage = std::make_shared<std::vector<std::byte>>(3, std::byte{1});
  const TomopFeed::Outcome truncated =
      f.handle(std::shared_ptr<const std::byte>(garbage, garbage->data()), garbage->size(), 0);
  ASSERT_TRUE(truncated.refused);
  EXPECT_EQ(truncated.refused->reason, "truncated_packet");
  // The scan is still there: a good projection goes through.
  EXPECT_TRUE(feed(f, Projection{2, 0, {4, 8}, FloatView::of(pixels)}).outcome.message);
}

TEST(TomopFeed, EveryGeometryPacketStartsANewScan) {
  TomopFeed f{WireLimits{}};
  start_parallel(f);
  const std::uint64_t first = f.active_scan_id();
  start_parallel(f);
  EXPECT_EQ(f.active_scan_id(), first + 1);
}

}  // namespace
}  // namespace slicestream
