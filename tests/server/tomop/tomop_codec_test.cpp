// The tomop codec against byte strings written by hand from the protocol table: every packet of
// both directions encodes to exactly its golden bytes and decodes back; every truncation, every
// trailing byte, oversized and negative counts, unknown ids and bad bools are refused with their
// reason, without reading outside the buffer.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "server/tomop/tomop_codec.hpp"
#include "tests/server/tomop/golden_bytes.hpp"

namespace slicestream {
namespace {

using namespace tomop;
using test::Bytes;

const std::vector<float> kTwoByThree = {0.5f, -1.25f, 2.0f, 3.5f, -0.0625f, 1e-3f};
const std::vector<float> kAngles = {0.0f, 0.785398f, 1.570796f};
const std::vector<float> kVectors = {0, -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1,
                                     1, 0,  0, 0, 0, 0, 0, 1, 0, 0, 0, 1};
const std::array<float, 9> kOrientation = {0, 2, 0, 0, 0, 2, 0, -1, -1};

struct Golden {
  const char* name;
  Packet packet;
  std::vector<std::byte> bytes;
};

std::vector<Golden> golden_packets() {
  std::vector<Golden> cases;
  cases.push_back(
      {"MakeScene", MakeScene{"slicestream", 3}, Bytes().i32(0x101).str("slicestream").i32(3)});
  cases.push_back({"KillScene", KillScene{7}, Bytes().i32(0x102).i32(7)});
  cases.push_back(
      {"SliceData", SliceData{2, 5, {3, 2}, FloatView::of(kTwoByThree), false},
       Bytes().i32(0x201).i32(2).i32(5).i32(3).i32(2).floats(kTwoByThree).boolean(false)});
  cases.push_back(
      {"PartialSliceData",
       PartialSliceData{1, 4, {8, 9}, {3, 2}, {64, 32}, true, FloatView::of(kTwoByThree)},
       Bytes()
           .i32(0x202)
           .i32(1)
           .i32(4)
           .i32(8)
           .i32(9)
           .i32(3)
           .i32(2)
           .i32(64)
           .i32(32)
           .boolean(true)
           .floats(kTwoByThree)});
  cases.push_back({"VolumeData", VolumeData{1, {1, 2, 3}, FloatView::of(kTwoByThree)},
                   Bytes().i32(0x203).i32(1).i32(1).i32(2).i32(3).floats(kTwoByThree)});
  cases.push_back(
      {"PartialVolumeData",
       PartialVolumeData{1, {0, 1, 2}, {1, 2, 3}, {4, 5, 6}, FloatView::of(kTwoByThree)},
       Bytes()
           .i32(0x204)
           .i32(1)
           .i32(0)
           .i32(1)
           .i32(2)
           .i32(1)
           .i32(2)
           .i32(3)
           .i32(4)
           .i32(5)
           .i32(6)
           .floats(kTwoByThree)});
  Bytes set_slice;
  set_slice.i32(0x205).i32(3).i32(11);
  for (float v : kOrientation)
    set_slice.f32(v);
  cases.push_back({"SetSlice", SetSlice{3, 11, kOrientation}, set_slice});
  cases.push_back({"RemoveSlice", RemoveSlice{3, 11}, Bytes().i32(0x206).i32(3).i32(11)});
  cases.push_back(
      {"GroupRequestSlices", GroupRequestSlices{3, 1}, Bytes().i32(0x207).i32(3).i32(1)});
  cases.push_back({"GeometrySpecification", GeometrySpecification{0, {-1.5f, -2, -3}, {1.5f, 2, 3}},
                   Bytes().i32(0x301).i32(0).f32(-1.5f).f32(-2).f32(-3).f32(1.5f).f32(2).f32(3)});
  cases.push_back({"ScanSettings", ScanSettings{0, 10, 20, true, true},
                   Bytes().i32(0x302).i32(0).i32(10).i32(20).boolean(true)});
  cases.push_back({"ScanSettings16", ScanSettings{0, 4, 5, false, false},
                   Bytes().i32(0x302).i32(0).i32(4).i32(5)});
  cases.push_back({"ParallelBeamGeometry",
                   ParallelBeamGeometry{0, 16, 32, 3, FloatView::of(kAngles)},
                   Bytes().i32(0x303).i32(0).i32(16).i32(32).i32(3).floats(kAngles)});
  cases.push_back({"ParallelVecGeometry",
                   ParallelVecGeometry{0, 16, 32, 2, FloatView::of(kVectors)},
                   Bytes().i32(0x304).i32(0).i32(16).i32(32).i32(2).floats(kVectors)});
  cases.push_back(
      {"ConeBeamGeometry",
       ConeBeamGeometry{0, 16, 32, 3, 190.0f, 150.0f, {0.25f, 0.5f}, FloatView::of(kAngles)},
       Bytes()
           .i32(0x305)
           .i32(0)
           .i32(16)
           .i32(32)
           .i32(3)
           .f32(190)
           .f32(150)
           .f32(0.25f)
           .f32(0.5f)
           .floats(kAngles)});
  cases.push_back({"ConeVecGeometry", ConeVecGeometry{0, 16, 32, 2, FloatView::of(kVectors)},
                   Bytes().i32(0x306).i32(0).i32(16).i32(32).i32(2).floats(kVectors)});
  Bytes projection_data;
  projection_data.i32(0x307).i32(1).i32(9).f32(1).f32(2).f32(3);
  for (float v : kOrientation)
    projection_data.f32(v);
  projection_data.i32(2).i32(3).floats(kTwoByThree);
  cases.push_back(
      {"ProjectionData",
       ProjectionData{1, 9, {1, 2, 3}, kOrientation, {2, 3}, FloatView::of(kTwoByThree)},
       projection_data});
  Bytes partial_projection;
  partial_projection.i32(0x308).i32(1).i32(9).f32(1).f32(2).f32(3);
  for (float v : kOrientation)
    partial_projection.f32(v);
  partial_projection.i32(20).i32(30).i32(4).i32(5).i32(2).i32(3).floats(kTwoByThree);
  cases.push_back(
      {"PartialProjectionData",
       PartialProjectionData{
           1, 9, {1, 2, 3}, kOrientation, {20, 30}, {4, 5}, {2, 3}, FloatView::of(kTwoByThree)},
       partial_projection});
  cases.push_back({"Projection", Projection{2, 41, {2, 3}, FloatView::of(kTwoByThree)},
                   Bytes().i32(0x309).i32(2).i32(41).i32(2).i32(3).floats(kTwoByThree)});
  cases.push_back({"SetPart", SetPart{1, 2, {0, 0, 0}, {1, 1, 1}},
                   Bytes().i32(0x401).i32(1).i32(2).f32(0).f32(0).f32(0).f32(1).f32(1).f32(1)});
  cases.push_back({"ParameterBool", ParameterBool{1, "refine", true},
                   Bytes().i32(0x501).i32(1).str("refine").boolean(true)});
  cases.push_back({"ParameterFloat", ParameterFloat{1, "cutoff", 0.75f},
                   Bytes().i32(0x502).i32(1).str("cutoff").f32(0.75f)});
  cases.push_back(
      {"ParameterEnum", ParameterEnum{1, "filter", {"hann", "ram-lak", ""}},
       Bytes().i32(0x503).i32(1).str("filter").i32(3).str("hann").str("ram-lak").str("")});
  cases.push_back({"Tracker", Tracker{1, "residual", 0.125f},
                   Bytes().i32(0x504).i32(1).str("residual").f32(0.125f)});
  cases.push_back({"Benchmark", Benchmark{1, "slice", 12.5f},
                   Bytes().i32(0x505).i32(1).str("slice").f32(12.5f)});
  return cases;
}

TEST(TomopCodec, EveryPacketEncodesToItsGoldenBytesAndDecodesBack) {
  const std::vector<Golden> cases = golden_packets();
  std::set<std::size_t> kinds;
  for (const Golden& c : cases) {
    SCOPED_TRACE(c.name);
    kinds.insert(c.packet.index());
    EXPECT_EQ(encoded_size(c.packet), c.bytes.size());
    EXPECT_EQ(encode(c.packet), c.bytes);
    Decoded<Packet> decoded = decode_packet(c.bytes.data(), c.bytes.size());
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(decoded.value().index(), c.packet.index());
    EXPECT_EQ(encode(decoded.value()), c.bytes);
  }
  EXPECT_EQ(kinds.size(), std::variant_size_v<Packet>) << "a packet type has no golden case";
}

TEST(TomopCodec, DecodedFieldsAreThoseOnTheWire) {
  const std::vector<std::byte> bytes =
      Bytes().i32(0x309).i32(1).i32(7).i32(2).i32(3).floats(kTwoByThree);
  Decoded<Packet> decoded = decode_packet(bytes.data(), bytes.size());
  ASSERT_TRUE(decoded.ok());
  const auto& projection = std::get<Projection>(decoded.value());
  EXPECT_EQ(projection.type, Projection::kFlat);
  EXPECT_EQ(projection.projection_id, 7);
  EXPECT_EQ(projection.shape, (Int2{2, 3}));
  // The pixels are a view into the message at byte 24, never a copy.
  EXPECT_EQ(projection.data.bytes, bytes.data() + 24);
  EXPECT_EQ(projection.data.to_vector(), kTwoByThree);

  const std::vector<std::byte> settings = Bytes().i32(0x302).i32(0).i32(4).i32(5);
  Decoded<Packet> old = decode_packet(settings.data(), settings.size());
  ASSERT_TRUE(old.ok());
  const auto& s = std::get<ScanSettings>(old.value());
  EXPECT_EQ(s.darks, 4);
  EXPECT_EQ(s.flats, 5);
  EXPECT_FALSE(s.has_already_linear);
  EXPECT_FALSE(s.already_linear);

  const std::vector<std::byte> choices =
      Bytes().i32(0x503).i32(9).str("filter").i32(2).str("hann").str("cosine");
  Decoded<Packet> choice = decode_packet(choices.data(), choices.size());
  ASSERT_TRUE(choice.ok());
  const auto& e = std::get<ParameterEnum>(choice.value());
  EXPECT_EQ(e.scene_id, 9);
  EXPECT_EQ(e.parameter_name, "filter");
  EXPECT_EQ(e.values, (std::vector<std::string>{"hann", "cosine"}));
}

// Every proper prefix of every packet is refused as truncated, the 16-byte ScanSettings aside
// (the older release's form). Each prefix is copied to a buffer of its exact size, so a read
// beyond it would be caught by AddressSanitizer builds.
TEST(TomopCodec, EveryTruncationIsRefused) {
  for (const Golden& c : golden_packets()) {
    SCOPED_TRACE(c.name);
    for (std::size_t n = 0; n < c.bytes.size(); ++n) {
      const std::vector<std::byte> prefix(c.bytes.begin(), c.bytes.begin() + n);
      Decoded<Packet> decoded = decode_packet(prefix.data(), prefix.size());
      if (std::string(c.name) == "ScanSettings" && n == 16) {
        EXPECT_TRUE(decoded.ok());
        continue;
      }
      ASSERT_FALSE(decoded.ok()) << n << " bytes";
      EXPECT_EQ(decoded.error().reason, reason::kTruncated) << n << " bytes";
      EXPECT_FALSE(decoded.error().message.empty());
    }
  }
}

TEST(TomopCodec, TrailingBytesAreRefused) {
  for (const Golden& c : golden_packets()) {
    SCOPED_TRACE(c.name);
    std::vector<std::byte> longer = c.bytes;
    longer.push_back(std::byte{0});
    Decoded<Packet> decoded = decode_packet(longer.data(), longer.size());
    if (std::string(c.name) == "ScanSettings16") {
      EXPECT_TRUE(decoded.ok());  // the 17-byte form with already_linear = false
      continue;
    }
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.error().reason, reason::kTrailingBytes);
  }
}

TEST(TomopCodec, UnknownIdsAreRefused) {
  for (std::int32_t id : {0, 1, 0x100, 0x208, 0x30a, 0x506, -1, 0x7fffffff}) {
    const std::vector<std::byte> bytes = Bytes().i32(id).i32(0);
    Decoded<Packet> decoded = decode_packet(bytes.data(), bytes.size());
    ASSERT_FALSE(decoded.ok()) << id;
    EXPECT_EQ(decoded.error().reason, reason::kUnknownPacket);
  }
  EXPECT_EQ(peek_packet_id(nullptr, 0), std::nullopt);
  EXPECT_EQ(packet_name(0x201), "SliceData (0x201)");
  EXPECT_EQ(packet_name(0x999), "unknown (0x999)");
}

TEST(TomopCodec, OversizedAndNegativeCountsAreRefusedBeforeAllocating) {
  struct Case {
    std::vector<std::byte> bytes;
    const char* reason;
  };
  const std::vector<Case> cases = {
      // A count far beyond the bytes that follow: refused, nothing reserved.
      {Bytes().i32(0x309).i32(2).i32(0).i32(1).i32(1).i32(0x7fffffff).f32(1), reason::kTruncated},
      {Bytes().i32(0x303).i32(0).i32(4).i32(4).i32(2).i32(-2), wire_reason::kBadValue},
      {Bytes().i32(0x503).i32(0).str("filter").i32(1000000).str("a"), reason::kTruncated},
      {Bytes().i32(0x503).i32(0).str("filter").i32(-1), wire_reason::kBadValue},
      {Bytes().i32(0x201).i32(0).i32(0).i32(1).i32(1).floats({1.0f}).byte(2),
       wire_reason::kBadValue},
  };
  for (const Case& c : cases) {
    Decoded<Packet> decoded = decode_packet(c.bytes.data(), c.bytes.size());
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.error().reason, c.reason) << decoded.error().message;
  }
  Bytes many;
  many.i32(0x503).i32(0).str("filter").i32(static_cast<std::int32_t>(kMaxEnumValues + 1));
  for (std::size_t i = 0; i <= kMaxEnumValues; ++i)
    many.str("x");
  Decoded<Packet> enums = decode_packet(many.get().data(), many.get().size());
  ASSERT_FALSE(enums.ok());
  EXPECT_EQ(enums.error().reason, wire_reason::kOversized);

  const std::string long_name(kMaxStringBytes + 10, 'n');
  const std::vector<std::byte> name = Bytes().i32(0x502).i32(0).str(long_name).f32(1);
  Decoded<Packet> named = decode_packet(name.data(), name.size());
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.error().reason, wire_reason::kOversized);
}

// Random bytes behind every valid id: never a crash, always a decision (a short fuzz run).
TEST(TomopCodec, RandomBytesAreDecodedOrRefused) {
  const std::uint32_t seed = std::random_device{}();
  SCOPED_TRACE(seed);
  std::mt19937 engine(seed);
  for (const Golden& c : golden_packets()) {
    for (int round = 0; round < 200; ++round) {
      std::vector<std::byte> bytes = c.bytes;
      const int flips = 1 + static_cast<int>(engine() % 4);
      for (int f = 0; f < flips; ++f) {
        const std::size_t at = 4 + engine() % (bytes.size() - 4);
        bytes[at] = static_cast<std::byte>(engine());
      }
      bytes.resize(4 + engine() % (bytes.size() + 4));
      Decoded<Packet> decoded = decode_packet(bytes.data(), bytes.size());
      if (decoded.ok()) {
        EXPECT_EQ(encode(decoded.value()), bytes);
      }
    }
  }
}

}  // namespace
}  // namespace slicestream
