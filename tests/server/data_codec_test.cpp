// The data endpoint's codec: round trips of ScanBegin (three geometries), Frame (payload shared,
// not copied) and ScanEnd, and every class of bad input with its reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "server/codec/data_codec.hpp"
#include "tests/server/wire_builders.hpp"

namespace slicestream {
namespace {

using test::GeometryKind;
using test::Random;

Decoded<DataMessage> decode(std::vector<zmq::message_t>& parts, const WireLimits& limits = {}) {
  return decode_data_message(parts, parts.size(), 42, limits);
}

Decoded<DataMessage> decode_scan(const v1::ScanBegin& scan, const WireLimits& limits = {}) {
  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(test::header_bytes(scan)));
  return decode(parts, limits);
}

std::string reason_of(const Decoded<DataMessage>& decoded) {
  return decoded.ok() ? "ok" : decoded.error().reason;
}

void expect_vec3(const Vec3& actual, const v1::Vec3& expected) {
  EXPECT_EQ(actual.x, expected.x());
  EXPECT_EQ(actual.y, expected.y());
  EXPECT_EQ(actual.z, expected.z());
}

void expect_common_fields(const ScanDescription& scan, const v1::ScanBegin& wire) {
  EXPECT_EQ(scan.scan_id, wire.scan_id());
  EXPECT_EQ(scan.geometry.detector.rows, static_cast<int>(wire.detector_rows()));
  EXPECT_EQ(scan.geometry.detector.cols, static_cast<int>(wire.detector_cols()));
  EXPECT_EQ(scan.pixel_type, PixelType::kUint16);
  EXPECT_EQ(scan.dark_count, static_cast<int>(wire.dark_count()));
  EXPECT_EQ(scan.flat_count, static_cast<int>(wire.flat_count()));
  EXPECT_EQ(scan.already_linear, wire.already_linear());
  EXPECT_EQ(scan.projections_per_rotation(), static_cast<int>(wire.projections_per_rotation()));
  EXPECT_EQ(scan.description, wire.description());
  expect_vec3(scan.volume.min_mm, wire.volume().min_mm());
  expect_vec3(scan.volume.max_mm, wire.volume().max_mm());
}

void expect_same_vectors(const ScanGeometry& actual, const ScanGeometry& expected) {
  ASSERT_EQ(actual.vectors.size(), expected.vectors.size());
  EXPECT_EQ(actual.beam, expected.beam);
  for (std::size_t i = 0; i < actual.vectors.size(); ++i) {
    const ProjectionVector& a = actual.vectors[i];
    const ProjectionVector& e = expected.vectors[i];
    for (auto [x, y] : {std::pair{a.source_or_ray, e.source_or_ray},
                        std::pair{a.detector_center, e.detector_center}, std::pair{a.u, e.u},
                        std::pair{a.v, e.v}}) {
      EXPECT_EQ(x.x, y.x);
      EXPECT_EQ(x.y, y.y);
      EXPECT_EQ(x.z, y.z);
    }
  }
}

TEST(DataCodec, ParallelScanBeginRoundTrip) {
  Random random;
  SCOPED_TRACE(random.seed);
  const v1::ScanBegin wire = test::random_scan_begin(random, GeometryKind::kParallel);
  Decoded<DataMessage> decoded = decode_scan(wire);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  const auto& begin = std::get<ScanBegin>(decoded.value());
  EXPECT_EQ(begin.arrival_ns, 42u);
  expect_common_fields(begin.scan, wire);
  ASSERT_TRUE(begin.scan.circular_parallel.has_value());
  EXPECT_FALSE(begin.scan.circular_cone.has_value());
  const CircularParallelParams& params = *begin.scan.circular_parallel;
  EXPECT_EQ(params.angles_rad, std::vector<double>(wire.parallel().angles_rad().begin(),
                                                   wire.parallel().angles_rad().end()));
  EXPECT_EQ(params.pixel_width_mm, wire.pixel_width_mm());
  EXPECT_EQ(params.pixel_height_mm, wire.pixel_height_mm());
  expect_same_vectors(begin.scan.geometry,
                      make_parallel_geometry(begin.scan.geometry.detector, params));
}

TEST(DataCodec, ConeScanBeginRoundTrip) {
  Random random;
  SCOPED_TRACE(random.seed);
  const v1::ScanBegin wire = test::random_scan_begin(random, GeometryKind::kCone);
  Decoded<DataMessage> decoded = decode_scan(wire);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  const auto& scan = std::get<ScanBegin>(decoded.value()).scan;
  expect_common_fields(scan, wire);
  ASSERT_TRUE(scan.circular_cone.has_value());
  const CircularConeParams& params = *scan.circular_cone;
  EXPECT_EQ(params.source_origin_mm, wire.cone().source_origin_mm());
  EXPECT_EQ(params.origin_detector_mm, wire.cone().origin_detector_mm());
  EXPECT_EQ(params.detector_offset_u_mm, wire.cone().detector_offset_u_mm());
  EXPECT_EQ(params.detector_offset_v_mm, wire.cone().detector_offset_v_mm());
  EXPECT_EQ(params.pixel_width_mm, wire.pixel_width_mm());
  EXPECT_EQ(params.angles_rad.size(), static_cast<std::size_t>(wire.cone().angles_rad_size()));
  EXPECT_EQ(scan.geometry.beam, BeamKind::kCone);
  expect_same_vectors(scan.geometry, make_cone_geometry(scan.geometry.detector, params));
}

TEST(DataCodec, VectorScanBeginRoundTrip) {
  Random random;
  SCOPED_TRACE(random.seed);
  const v1::ScanBegin wire = test::random_scan_begin(random, GeometryKind::kVectors);
  Decoded<DataMessage> decoded = decode_scan(wire);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  const auto& scan = std::get<ScanBegin>(decoded.value()).scan;
  expect_common_fields(scan, wire);
  EXPECT_FALSE(scan.circular_cone.has_value());
  EXPECT_FALSE(scan.circular_parallel.has_value());
  const std::vector<double> values(wire.vectors().vectors().begin(),
                                   wire.vectors().vectors().end());
  expect_same_vectors(scan.geometry,
                      make_vector_geometry(BeamKind::kCone, scan.geometry.detector, values));
}

TEST(DataCodec, FramePayloadIsSharedNotCopied) {
  Random random;
  SCOPED_TRACE(random.seed);
  // At least 8 x 8 pixels: ZeroMQ keeps messages of up to 33 bytes inside the message object
  // itself, so a payload that small moves with the message and no decoder could keep its address.
  const std::uint32_t rows = random.integer(8, 30), cols = random.integer(8, 30);
  for (auto [type, bytes] :
       {std::pair{v1::PIXEL_TYPE_UINT16, 2u}, std::pair{v1::PIXEL_TYPE_UINT32, 4u},
        std::pair{v1::PIXEL_TYPE_FLOAT32, 4u}}) {
    v1::Frame wire = test::frame_header(7, rows, cols, type, v1::FRAME_KIND_FLAT, 3);
    wire.set_position(5);
    std::vector<zmq::message_t> parts;
    parts.push_back(test::part(test::header_bytes(wire)));
    zmq::message_t payload(std::size_t{rows} * cols * bytes);
    for (std::size_t i = 0; i < payload.size(); ++i) {
      static_cast<std::uint8_t*>(payload.data())[i] =
          static_cast<std::uint8_t>(random.integer(0, 255));
    }
    const std::vector<std::uint8_t> expected(payload.data<std::uint8_t>(),
                                             payload.data<std::uint8_t>() + payload.size());
    const void* address = payload.data();
    parts.push_back(std::move(payload));
    DataDecodeInfo info;
    Decoded<DataMessage> decoded = decode_data_message(parts, 2, 99, {}, &info);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    const auto& frame = std::get<RawFrame>(decoded.value());
    EXPECT_EQ(frame.payload.get(), address) << "the payload was copied";
    EXPECT_FALSE(info.payload_realigned);
    EXPECT_EQ(frame.payload_bytes, expected.size());
    EXPECT_EQ(std::memcmp(frame.payload.get(), expected.data(), expected.size()), 0);
    EXPECT_EQ(frame.scan_id, 7u);
    EXPECT_EQ(frame.kind, FrameKind::kFlat);
    EXPECT_EQ(frame.index, 3u);
    EXPECT_EQ(frame.position, std::optional<std::uint32_t>(5));
    EXPECT_FALSE(frame.angle_rad.has_value());
    EXPECT_EQ(frame.detector_timestamp_ns, 123456789u);
    EXPECT_EQ(frame.arrival_ns, 99u);
    EXPECT_EQ(frame.shape, (DetectorShape{static_cast<int>(rows), static_cast<int>(cols)}));
    EXPECT_EQ(frame.view().bytes(), expected.size());
  }
}

TEST(DataCodec, FrameWithAngleAndMisalignedPayload) {
  v1::Frame wire = test::frame_header(1, 3, 5, v1::PIXEL_TYPE_FLOAT32);
  wire.set_angle_rad(1.25);
  // A payload at an odd address (the transport may hand out any address): copied once, aligned.
  static std::vector<std::uint8_t> storage(3 * 5 * 4 + 1);
  for (std::size_t i = 0; i < storage.size(); ++i)
    storage[i] = static_cast<std::uint8_t>(i * 7);
  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(test::header_bytes(wire)));
  parts.emplace_back(storage.data() + 1, storage.size() - 1, nullptr, nullptr);
  DataDecodeInfo info;
  Decoded<DataMessage> decoded = decode_data_message(parts, 2, 0, {}, &info);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  const auto& frame = std::get<RawFrame>(decoded.value());
  EXPECT_TRUE(info.payload_realigned);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(frame.payload.get()) % alignof(float), 0u);
  EXPECT_EQ(std::memcmp(frame.payload.get(), storage.data() + 1, storage.size() - 1), 0);
  EXPECT_EQ(frame.angle_rad, std::optional<double>(1.25));
  EXPECT_FALSE(frame.position.has_value());
}

TEST(DataCodec, ScanEndRoundTrip) {
  v1::DataHeader header;
  header.set_protocol_version(1);
  header.mutable_scan_end()->set_scan_id(77);
  header.mutable_scan_end()->set_frames_sent(1234);
  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(header.SerializeAsString()));
  Decoded<DataMessage> decoded = decode(parts);
  ASSERT_TRUE(decoded.ok());
  const auto& end = std::get<ScanEnd>(decoded.value());
  EXPECT_EQ(end.scan_id, 77u);
  EXPECT_EQ(end.frames_sent, 1234u);
  EXPECT_EQ(end.arrival_ns, 42u);
}

// ------------------------------------------------------------------------------- bad input

TEST(DataCodecRejects, TruncatedAndGarbageHeaders) {
  Random random;
  const std::string bytes =
      test::header_bytes(test::random_scan_begin(random, GeometryKind::kCone));
  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(bytes.substr(0, bytes.size() / 2)));
  EXPECT_EQ(reason_of(decode(parts)), "undecodable_header");
  parts.clear();
  parts.push_back(test::part(std::string(64, '\xff')));
  EXPECT_EQ(reason_of(decode(parts)), "undecodable_header");
}

TEST(DataCodecRejects, WrongPartCounts) {
  Random random;
  const v1::ScanBegin scan = test::random_scan_begin(random, GeometryKind::kParallel);
  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(test::header_bytes(scan)));
  parts.push_back(test::part("extra"));
  Decoded<DataMessage> decoded = decode(parts);
  EXPECT_EQ(reason_of(decoded), "bad_parts");
  EXPECT_EQ(decoded.error().scan_id, scan.scan_id());

  const v1::Frame frame = test::frame_header(1, 2, 2);
  parts.clear();
  parts.push_back(test::part(test::header_bytes(frame)));
  EXPECT_EQ(reason_of(decode(parts)), "bad_parts");  // no payload
  parts.push_back(zmq::message_t(8));
  parts.push_back(zmq::message_t(8));
  EXPECT_EQ(reason_of(decode(parts)), "bad_parts");  // two payloads
  // The endpoint keeps only the first parts; the count tells the codec about the rest.
  parts.pop_back();
  EXPECT_EQ(reason_of(decode_data_message(parts, 5, 0, {})), "bad_parts");
  std::vector<zmq::message_t> none;
  EXPECT_EQ(reason_of(decode(none)), "bad_parts");
}

TEST(DataCodecRejects, ProtocolVersionAndUnknownKind) {
  v1::DataHeader header;
  header.set_protocol_version(2);
  header.mutable_scan_end()->set_scan_id(1);
  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(header.SerializeAsString()));
  EXPECT_EQ(reason_of(decode(parts)), "bad_protocol_version");

  v1::DataHeader empty;
  empty.set_protocol_version(1);
  parts.clear();
  parts.push_back(test::part(empty.SerializeAsString()));
  EXPECT_EQ(reason_of(decode(parts)), "unknown_kind");

  // A body from a newer protocol: field 9, length-delimited, empty. Parses, but is unknown.
  const std::string newer("\x08\x01\x4a\x00", 4);
  parts.clear();
  parts.push_back(test::part(newer));
  EXPECT_EQ(reason_of(decode(parts)), "unknown_kind");
}

TEST(DataCodecRejects, PayloadSizeAndPixelType) {
  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(test::header_bytes(test::frame_header(1, 4, 5))));
  parts.emplace_back(4 * 5 * 2 - 1);
  EXPECT_EQ(reason_of(decode(parts)), "bad_payload_size");

  for (int type : {0, 4, 1000}) {
    parts.clear();
    parts.push_back(test::part(
        test::header_bytes(test::frame_header(1, 4, 5, static_cast<v1::PixelType>(type)))));
    parts.emplace_back(4 * 5 * 2);
    EXPECT_EQ(reason_of(decode(parts)), "bad_pixel_type") << type;
  }
  Random random;
  v1::ScanBegin scan = test::random_scan_begin(random, GeometryKind::kParallel);
  scan.set_pixel_type(v1::PIXEL_TYPE_UNSPECIFIED);
  EXPECT_EQ(reason_of(decode_scan(scan)), "bad_pixel_type");
}

TEST(DataCodecRejects, FrameKindAndShape) {
  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(test::header_bytes(
      test::frame_header(1, 4, 5, v1::PIXEL_TYPE_UINT16, v1::FRAME_KIND_UNSPECIFIED))));
  parts.emplace_back(40);
  EXPECT_EQ(reason_of(decode(parts)), "bad_frame_kind");
  parts.clear();
  parts.push_back(test::part(test::header_bytes(test::frame_header(1, 0, 5))));
  parts.emplace_back(0);
  EXPECT_EQ(reason_of(decode(parts)), "bad_shape");
}

TEST(DataCodecRejects, NonFiniteNumbers) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Random random;
  SCOPED_TRACE(random.seed);
  v1::ScanBegin scan = test::random_scan_begin(random, GeometryKind::kParallel);
  scan.mutable_parallel()->set_angles_rad(3, nan);
  EXPECT_EQ(reason_of(decode_scan(scan)), "non_finite");

  scan = test::random_scan_begin(random, GeometryKind::kCone);
  scan.mutable_cone()->set_source_origin_mm(inf);
  EXPECT_EQ(reason_of(decode_scan(scan)), "non_finite");
  scan = test::random_scan_begin(random, GeometryKind::kCone);
  scan.mutable_cone()->set_detector_offset_v_mm(nan);
  EXPECT_EQ(reason_of(decode_scan(scan)), "non_finite");

  scan = test::random_scan_begin(random, GeometryKind::kVectors);
  scan.mutable_vectors()->set_vectors(17, nan);
  EXPECT_EQ(reason_of(decode_scan(scan)), "non_finite");

  scan = test::random_scan_begin(random, GeometryKind::kParallel);
  scan.set_pixel_width_mm(nan);
  EXPECT_EQ(reason_of(decode_scan(scan)), "non_finite");

  scan = test::random_scan_begin(random, GeometryKind::kParallel);
  scan.mutable_volume()->mutable_max_mm()->set_y(nan);
  EXPECT_EQ(reason_of(decode_scan(scan)), "non_finite");

  v1::Frame frame = test::frame_header(1, 2, 2);
  frame.set_angle_rad(nan);
  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(test::header_bytes(frame)));
  parts.emplace_back(8);
  EXPECT_EQ(reason_of(decode(parts)), "non_finite");
}

TEST(DataCodecRejects, OversizedEverything) {
  WireLimits limits;
  limits.max_detector_side = 64;
  limits.max_projections_per_rotation = 16;
  limits.max_calibration_frames = 3;
  limits.max_frame_bytes = 1000;
  limits.max_header_bytes = 4096;
  Random random;
  SCOPED_TRACE(random.seed);

  v1::ScanBegin scan = test::random_scan_begin(random, GeometryKind::kParallel);
  scan.set_detector_cols(65);
  EXPECT_EQ(reason_of(decode_scan(scan, limits)), "oversized");
  scan = test::random_scan_begin(random, GeometryKind::kParallel, 17);
  EXPECT_EQ(reason_of(decode_scan(scan, limits)), "oversized");
  scan = test::random_scan_begin(random, GeometryKind::kParallel);
  scan.set_dark_count(4);
  EXPECT_EQ(reason_of(decode_scan(scan, limits)), "oversized");
  scan = test::random_scan_begin(random, GeometryKind::kVectors, 16);
  scan.set_description(std::string(5000, 'x'));
  EXPECT_EQ(reason_of(decode_scan(scan, limits)), "oversized");  // header bytes

  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(test::header_bytes(test::frame_header(1, 64, 64))));
  parts.emplace_back(64 * 64 * 2);  // consistent with its header, but over max_frame_bytes
  EXPECT_EQ(reason_of(decode(parts, limits)), "oversized");
  parts.clear();
  parts.push_back(test::part(test::header_bytes(test::frame_header(1, 65, 1))));
  parts.emplace_back(130);
  EXPECT_EQ(reason_of(decode(parts, limits)), "oversized");
  parts.clear();
  parts.push_back(test::part(test::header_bytes(test::frame_header(1, 2, 2))));
  parts.emplace_back(2000);  // far more than declared and than the limit
  EXPECT_EQ(reason_of(decode(parts, limits)), "oversized");
}

TEST(DataCodecRejects, GeometryAndVolume) {
  Random random;
  SCOPED_TRACE(random.seed);
  v1::ScanBegin scan = test::random_scan_begin(random, GeometryKind::kParallel);
  scan.set_projections_per_rotation(11);  // 12 angles
  EXPECT_EQ(reason_of(decode_scan(scan)), "bad_geometry");
  scan = test::random_scan_begin(random, GeometryKind::kParallel);
  scan.clear_parallel();
  EXPECT_EQ(reason_of(decode_scan(scan)), "bad_geometry");
  scan = test::random_scan_begin(random, GeometryKind::kParallel);
  scan.set_projections_per_rotation(0);
  EXPECT_EQ(reason_of(decode_scan(scan)), "bad_geometry");
  scan = test::random_scan_begin(random, GeometryKind::kCone);
  scan.set_pixel_height_mm(0);
  EXPECT_EQ(reason_of(decode_scan(scan)), "bad_geometry");
  scan = test::random_scan_begin(random, GeometryKind::kVectors);
  scan.mutable_vectors()->add_vectors(1.0);  // 12 * N + 1 numbers
  EXPECT_EQ(reason_of(decode_scan(scan)), "bad_geometry");
  scan = test::random_scan_begin(random, GeometryKind::kVectors);
  for (int k = 9; k < 12; ++k)
    scan.mutable_vectors()->set_vectors(k, 0);  // v = 0
  Decoded<DataMessage> decoded = decode_scan(scan);
  EXPECT_EQ(reason_of(decoded), "bad_geometry");
  EXPECT_NE(decoded.error().message.find("projection 0"), std::string::npos)
      << decoded.error().message;

  scan = test::random_scan_begin(random, GeometryKind::kCone);
  scan.mutable_volume()->mutable_min_mm()->set_z(scan.volume().max_mm().z());
  EXPECT_EQ(reason_of(decode_scan(scan)), "bad_volume");
  scan.clear_volume();
  EXPECT_EQ(reason_of(decode_scan(scan)), "bad_volume");

  scan = test::random_scan_begin(random, GeometryKind::kCone);
  scan.set_already_linear(true);  // with darks/flats declared
  EXPECT_EQ(reason_of(decode_scan(scan)), "bad_value");
}

TEST(DataCodecRejects, MessagesNameTheProblem) {
  std::vector<zmq::message_t> parts;
  parts.push_back(test::part(test::header_bytes(test::frame_header(9, 4, 5))));
  parts.emplace_back(7);
  Decoded<DataMessage> decoded = decode(parts);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error().scan_id, 9u);
  EXPECT_NE(decoded.error().message.find("7 bytes"), std::string::npos) << decoded.error().message;
  EXPECT_NE(decoded.error().message.find("40"), std::string::npos) << decoded.error().message;
}

}  // namespace
}  // namespace slicestream
