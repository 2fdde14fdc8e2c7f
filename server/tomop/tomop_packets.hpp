// The packets of the tomop protocol (RECAST3D 1.1 and its adapters), as plain structs.
//
// Every packet is one ZeroMQ message: an int32 packet id, then its fields in the order `fields`
// lists them, packed little-endian (docs/recast3d.md has the table). One `fields` function per
// packet serves the decoder, the size count and the encoder alike, so the three cannot disagree.
// Float arrays are views (FloatView) into the decoded message, never copies: a decoded packet
// lives no longer than the bytes it was decoded from.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

namespace slicestream::tomop {

enum class PacketId : std::int32_t {
  kMakeScene = 0x101,
  kKillScene = 0x102,
  kSliceData = 0x201,
  kPartialSliceData = 0x202,
  kVolumeData = 0x203,
  kPartialVolumeData = 0x204,
  kSetSlice = 0x205,
  kRemoveSlice = 0x206,
  kGroupRequestSlices = 0x207,
  kGeometrySpecification = 0x301,
  kScanSettings = 0x302,
  kParallelBeamGeometry = 0x303,
  kParallelVecGeometry = 0x304,
  kConeBeamGeometry = 0x305,
  kConeVecGeometry = 0x306,
  kProjectionData = 0x307,
  kPartialProjectionData = 0x308,
  kProjection = 0x309,
  kSetPart = 0x401,
  kParameterBool = 0x501,
  kParameterFloat = 0x502,
  kParameterEnum = 0x503,
  kTracker = 0x504,
  kBenchmark = 0x505,
};

// A vector<float> on the wire: `count` little-endian floats at `bytes` (unaligned, not owned).
struct FloatView {
  const std::byte* bytes = nullptr;
  std::size_t count = 0;

  // Of anything that holds contiguous floats (std::vector, SliceValues).
  template <typename Floats>
  static FloatView of(const Floats& values) {
    return {reinterpret_cast<const std::byte*>(values.data()), values.size()};
  }
  float at(std::size_t i) const {
    float value;
    std::memcpy(&value, bytes + i * sizeof(float), sizeof(float));
    return value;
  }
  std::vector<float> to_vector() const {
    std::vector<float> values(count);
    if (count > 0) std::memcpy(values.data(), bytes, count * sizeof(float));
    return values;
  }
};

using Int2 = std::array<std::int32_t, 2>;
using Int3 = std::array<std::int32_t, 3>;
using Float2 = std::array<float, 2>;
using Float3 = std::array<float, 3>;
using Float9 = std::array<float, 9>;

struct MakeScene {
  static constexpr PacketId kId = PacketId::kMakeScene;
  std::string name;
  std::int32_t dimension = 3;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.name), io(s.dimension);
  }
};

struct KillScene {
  static constexpr PacketId kId = PacketId::kKillScene;
  std::int32_t scene_id = 0;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id);
  }
};

struct SliceData {
  static constexpr PacketId kId = PacketId::kSliceData;
  std::int32_t scene_id = 0;
  std::int32_t slice_id = 0;
  Int2 slice_size{};
  FloatView data;
  bool additive = false;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.slice_id), io(s.slice_size), io(s.data), io(s.additive);
  }
};

struct PartialSliceData {
  static constexpr PacketId kId = PacketId::kPartialSliceData;
  std::int32_t scene_id = 0;
  std::int32_t slice_id = 0;
  Int2 slice_offset{};
  Int2 slice_size{};
  Int2 global_slice_size{};
  bool additive = false;
  FloatView data;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.slice_id), io(s.slice_offset), io(s.slice_size), io(s.global_slice_size),
        io(s.additive), io(s.data);
  }
};

struct VolumeData {
  static constexpr PacketId kId = PacketId::kVolumeData;
  std::int32_t scene_id = 0;
  Int3 volume_size{};
  FloatView data;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.volume_size), io(s.data);
  }
};

struct PartialVolumeData {
  static constexpr PacketId kId = PacketId::kPartialVolumeData;
  std::int32_t scene_id = 0;
  Int3 volume_offset{};
  Int3 volume_size{};
  Int3 global_volume_size{};
  FloatView data;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.volume_offset), io(s.volume_size), io(s.global_volume_size), io(s.data);
  }
};

struct SetSlice {
  static constexpr PacketId kId = PacketId::kSetSlice;
  std::int32_t scene_id = 0;
  std::int32_t slice_id = 0;
  Float9 orientation{};  // x-axis, y-axis, base point in the box normalised to [-1, 1]^3
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.slice_id), io(s.orientation);
  }
};

struct RemoveSlice {
  static constexpr PacketId kId = PacketId::kRemoveSlice;
  std::int32_t scene_id = 0;
  std::int32_t slice_id = 0;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.slice_id);
  }
};

struct GroupRequestSlices {
  static constexpr PacketId kId = PacketId::kGroupRequestSlices;
  std::int32_t scene_id = 0;
  std::int32_t group_size = 1;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.group_size);
  }
};

struct GeometrySpecification {
  static constexpr PacketId kId = PacketId::kGeometrySpecification;
  std::int32_t scene_id = 0;
  Float3 volume_min_point{};
  Float3 volume_max_point{};
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.volume_min_point), io(s.volume_max_point);
  }
};

// 17 bytes; releases before the already_linear flag send 16 (has_already_linear false).
struct ScanSettings {
  static constexpr PacketId kId = PacketId::kScanSettings;
  std::int32_t scene_id = 0;
  std::int32_t darks = 0;
  std::int32_t flats = 0;
  bool already_linear = false;
  bool has_already_linear = true;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.darks), io(s.flats);
    io.optional_last(s.already_linear, s.has_already_linear);
  }
};

struct ParallelBeamGeometry {
  static constexpr PacketId kId = PacketId::kParallelBeamGeometry;
  std::int32_t scene_id = 0;
  std::int32_t rows = 0;
  std::int32_t cols = 0;
  std::int32_t proj_count = 0;
  FloatView angles;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.rows), io(s.cols), io(s.proj_count), io(s.angles);
  }
};

// 12 floats per projection, ASTRA's parallel3d_vec (ray, detector centre, u, v) for
// ParallelVecGeometry, cone_vec (source, detector centre, u, v) for ConeVecGeometry.
template <PacketId Id>
struct VecGeometry {
  static constexpr PacketId kId = Id;
  std::int32_t scene_id = 0;
  std::int32_t rows = 0;
  std::int32_t cols = 0;
  std::int32_t proj_count = 0;
  FloatView vectors;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.rows), io(s.cols), io(s.proj_count), io(s.vectors);
  }
};
using ParallelVecGeometry = VecGeometry<PacketId::kParallelVecGeometry>;
using ConeVecGeometry = VecGeometry<PacketId::kConeVecGeometry>;

// detector_size is the spacing of one detector pixel (width, height), as SliceRecon passes it.
struct ConeBeamGeometry {
  static constexpr PacketId kId = PacketId::kConeBeamGeometry;
  std::int32_t scene_id = 0;
  std::int32_t rows = 0;
  std::int32_t cols = 0;
  std::int32_t proj_count = 0;
  float source_origin = 0;
  float origin_det = 0;
  Float2 detector_size{};
  FloatView angles;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.rows), io(s.cols), io(s.proj_count), io(s.source_origin), io(s.origin_det),
        io(s.detector_size), io(s.angles);
  }
};

struct ProjectionData {
  static constexpr PacketId kId = PacketId::kProjectionData;
  std::int32_t scene_id = 0;
  std::int32_t projection_id = 0;
  Float3 source_position{};
  Float9 detector_orientation{};
  Int2 detector_pixels{};
  FloatView data;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.projection_id), io(s.source_position), io(s.detector_orientation),
        io(s.detector_pixels), io(s.data);
  }
};

struct PartialProjectionData {
  static constexpr PacketId kId = PacketId::kPartialProjectionData;
  std::int32_t scene_id = 0;
  std::int32_t projection_id = 0;
  Float3 source_position{};
  Float9 detector_orientation{};
  Int2 detector_pixels{};
  Int2 partial_offset{};
  Int2 partial_size{};
  FloatView data;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.projection_id), io(s.source_position), io(s.detector_orientation),
        io(s.detector_pixels), io(s.partial_offset), io(s.partial_size), io(s.data);
  }
};

// What the adapters stream: type 0 dark, 1 flat, 2 standard; shape is (rows, cols).
struct Projection {
  static constexpr PacketId kId = PacketId::kProjection;
  static constexpr std::int32_t kDark = 0;
  static constexpr std::int32_t kFlat = 1;
  static constexpr std::int32_t kStandard = 2;
  std::int32_t type = kStandard;
  std::int32_t projection_id = 0;
  Int2 shape{};
  FloatView data;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.type), io(s.projection_id), io(s.shape), io(s.data);
  }
};

struct SetPart {
  static constexpr PacketId kId = PacketId::kSetPart;
  std::int32_t scene_id = 0;
  std::int32_t part_id = 0;
  Float3 min_pt{};
  Float3 max_pt{};
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.part_id), io(s.min_pt), io(s.max_pt);
  }
};

// A named value: ParameterBool / ParameterFloat (a control and its value, both directions),
// Tracker and Benchmark (a value the viewer plots or lists).
template <PacketId Id, typename T>
struct NamedValue {
  static constexpr PacketId kId = Id;
  std::int32_t scene_id = 0;
  std::string parameter_name;
  T value{};
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.parameter_name), io(s.value);
  }
};
using ParameterBool = NamedValue<PacketId::kParameterBool, bool>;
using ParameterFloat = NamedValue<PacketId::kParameterFloat, float>;
using Tracker = NamedValue<PacketId::kTracker, float>;
using Benchmark = NamedValue<PacketId::kBenchmark, float>;

// Registering: every choice, the current one first. From the viewer: the chosen one alone.
struct ParameterEnum {
  static constexpr PacketId kId = PacketId::kParameterEnum;
  std::int32_t scene_id = 0;
  std::string parameter_name;
  std::vector<std::string> values;
  template <typename S, typename Io>
  static void fields(S& s, Io& io) {
    io(s.scene_id), io(s.parameter_name), io(s.values);
  }
};

using Packet =
    std::variant<MakeScene, KillScene, SliceData, PartialSliceData, VolumeData, PartialVolumeData,
                 SetSlice, RemoveSlice, GroupRequestSlices, GeometrySpecification, ScanSettings,
                 ParallelBeamGeometry, ParallelVecGeometry, ConeBeamGeometry, ConeVecGeometry,
                 ProjectionData, PartialProjectionData, Projection, SetPart, ParameterBool,
                 ParameterFloat, ParameterEnum, Tracker, Benchmark>;

// "SliceData (0x201)"; "unknown (0x...)" for ids outside the protocol.
std::string packet_name(std::int32_t id);

}  // namespace slicestream::tomop
