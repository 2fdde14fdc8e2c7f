#include "clients/detector/scan_geometry_spec.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace slicestream::detector {
namespace {

constexpr double kPi = 3.14159265358979323846;

GeometrySpec cone_spec() {
  GeometrySpec g;
  g.beam = BeamKind::kCone;
  g.detector = {400, 600};
  g.pixel_width_mm = 0.3;
  g.pixel_height_mm = 0.3;
  g.source_origin_mm = 190;
  g.origin_detector_mm = 150;
  for (int k = 0; k < 150; ++k)
    g.slot_angles_rad.push_back(2 * kPi * k / 150);
  return g;
}

double distance_to_line(Vec3 point, Vec3 a, Vec3 b) {
  return norm(cross(point - a, b - a)) / norm(b - a);
}

TEST(FieldOfView, ParallelBeamIsTheDetectorAtTheAxis) {
  GeometrySpec g;
  g.detector = {10, 20};
  g.pixel_width_mm = 0.5;
  g.pixel_height_mm = 0.25;
  const VolumeBox box = field_of_view_box(g);
  EXPECT_DOUBLE_EQ(box.min_mm.x, -5);
  EXPECT_DOUBLE_EQ(box.max_mm.y, 5);
  EXPECT_DOUBLE_EQ(box.min_mm.z, -1.25);
  EXPECT_DOUBLE_EQ(box.max_mm.z, 1.25);
}

TEST(FieldOfView, ConeBeamCircleTouchesTheOuterRays) {
  const GeometrySpec g = cone_spec();
  const VolumeBox box = field_of_view_box(g);
  // The ray from the source to the detector's edge is tangent to the field-of-view circle.
  const Vec3 source{0, -190, 0};
  const Vec3 edge{300 * 0.3, 150, 0};
  EXPECT_NEAR(box.max_mm.x, distance_to_line({0, 0, 0}, source, edge), 1e-9);
  EXPECT_DOUBLE_EQ(box.min_mm.x, -box.max_mm.x);
  EXPECT_DOUBLE_EQ(box.max_mm.y, box.max_mm.x);
  // Vertically: the detector's half height demagnified to the axis.
  EXPECT_NEAR(box.max_mm.z, 200 * 0.3 * 190 / 340, 1e-9);
  EXPECT_NEAR(box.min_mm.z, -box.max_mm.z, 1e-12);
}

TEST(FieldOfView, DetectorOffsetsWidenAndShiftIt) {
  GeometrySpec g = cone_spec();
  const VolumeBox centred = field_of_view_box(g);
  g.detector_offset_u_mm = 20;
  g.detector_offset_v_mm = 34;
  const VolumeBox shifted = field_of_view_box(g);
  EXPECT_GT(shifted.max_mm.x, centred.max_mm.x);
  EXPECT_NEAR(shifted.center().z, 34 * 190.0 / 340, 1e-9);
  g.vectors.assign(12, 1.0);
  EXPECT_THROW(field_of_view_box(g), std::invalid_argument);
}

TEST(ResolvedGeometry, ConeFillsTheScanBegin) {
  const ResolvedGeometry geometry(cone_spec());
  EXPECT_TRUE(geometry.is_circular());
  EXPECT_EQ(geometry.slot_count(), 150);
  v1::ScanBegin sb;
  geometry.fill_scan_begin(sb);
  ASSERT_TRUE(sb.has_cone());
  EXPECT_EQ(sb.cone().angles_rad_size(), 150);
  EXPECT_DOUBLE_EQ(sb.cone().angles_rad(1), 2 * kPi / 150);
  EXPECT_DOUBLE_EQ(sb.cone().source_origin_mm(), 190);
  EXPECT_DOUBLE_EQ(sb.cone().origin_detector_mm(), 150);
  EXPECT_EQ(sb.detector_rows(), 400u);
  EXPECT_EQ(sb.detector_cols(), 600u);
  EXPECT_DOUBLE_EQ(sb.pixel_width_mm(), 0.3);
  EXPECT_EQ(sb.projections_per_rotation(), 150u);
  EXPECT_DOUBLE_EQ(sb.volume().max_mm().x(), geometry.volume().max_mm.x);
  // The slot vectors are ASTRA's cone vectors: angle 0 has its source at (0, -SOD, 0).
  const ProjectionVector& first = geometry.slot_geometry().vectors[0];
  EXPECT_NEAR(first.source_or_ray.y, -190, 1e-12);
  EXPECT_NEAR(first.detector_center.y, 150, 1e-12);
  const ProjectionVector at = geometry.vector_at_angle(2 * kPi / 150);
  const ProjectionVector& second = geometry.slot_geometry().vectors[1];
  EXPECT_NEAR(at.source_or_ray.x, second.source_or_ray.x, 1e-12);
  EXPECT_NEAR(at.u.y, second.u.y, 1e-12);
}

TEST(ResolvedGeometry, ParallelWithOffsetTravelsAsVectors) {
  GeometrySpec g;
  g.detector = {8, 10};
  g.pixel_width_mm = 2;
  g.pixel_height_mm = 3;
  g.slot_angles_rad = {0, kPi / 2};
  const ResolvedGeometry plain(g);
  v1::ScanBegin plain_sb;
  plain.fill_scan_begin(plain_sb);
  ASSERT_TRUE(plain_sb.has_parallel());
  EXPECT_TRUE(plain.is_circular());

  g.detector_offset_u_mm = 4;
  g.detector_offset_v_mm = -1;
  const ResolvedGeometry shifted(g);
  EXPECT_FALSE(shifted.is_circular());
  v1::ScanBegin sb;
  shifted.fill_scan_begin(sb);
  ASSERT_TRUE(sb.has_vectors());
  EXPECT_FALSE(sb.vectors().cone());
  ASSERT_EQ(sb.vectors().vectors_size(), 24);
  // Second projection (90 degrees): ray (1, 0, 0), u = (0, 2, 0), centre = 4 * u_hat + (0,0,-1).
  const auto& v = sb.vectors().vectors();
  EXPECT_NEAR(v[12], 1, 1e-12);
  EXPECT_NEAR(v[15], 0, 1e-12);
  EXPECT_NEAR(v[16], 4, 1e-12);
  EXPECT_NEAR(v[17], -1, 1e-12);
  EXPECT_NEAR(v[19], 2, 1e-12);
  EXPECT_NEAR(v[23], 3, 1e-12);
  EXPECT_THROW(shifted.vector_at_angle(0.1), std::logic_error);
}

TEST(ResolvedGeometry, VectorGeometryNeedsAVolume) {
  GeometrySpec g;
  g.beam = BeamKind::kCone;
  g.detector = {4, 4};
  g.vectors = {0, -50, 0, 0, 30, 0, 1, 0, 0, 0, 0, 1};
  EXPECT_THROW(ResolvedGeometry{g}, std::invalid_argument);
  g.volume = VolumeBox{{-5, -5, -5}, {5, 5, 5}};
  const ResolvedGeometry geometry(g);
  EXPECT_EQ(geometry.slot_count(), 1);
  v1::ScanBegin sb;
  geometry.fill_scan_begin(sb);
  ASSERT_TRUE(sb.has_vectors());
  EXPECT_TRUE(sb.vectors().cone());
  EXPECT_EQ(sb.vectors().vectors_size(), 12);
}

TEST(ResolvedGeometry, RejectsBadSpecsWithClearMessages) {
  auto message_of = [](GeometrySpec g) -> std::string {
    try {
      ResolvedGeometry{std::move(g)};
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  GeometrySpec no_pixels = cone_spec();
  no_pixels.pixel_width_mm = 0;
  EXPECT_NE(message_of(no_pixels).find("pixel size"), std::string::npos);
  GeometrySpec no_source = cone_spec();
  no_source.source_origin_mm = -1;
  EXPECT_NE(message_of(no_source).find("--sod"), std::string::npos);
  GeometrySpec no_angles = cone_spec();
  no_angles.slot_angles_rad.clear();
  EXPECT_NE(message_of(no_angles).find("angles"), std::string::npos);
  GeometrySpec bad_box = cone_spec();
  bad_box.volume = VolumeBox{{0, 0, 0}, {1, -1, 1}};
  EXPECT_NE(message_of(bad_box).find("min < max"), std::string::npos);
  GeometrySpec bad_vectors;
  bad_vectors.detector = {2, 2};
  bad_vectors.vectors.assign(13, 1.0);
  EXPECT_NE(message_of(bad_vectors).find("12 numbers"), std::string::npos);
}

}  // namespace
}  // namespace slicestream::detector
