#include "server/tomop/tomop_feed.hpp"

#include <cstring>
#include <type_traits>
#include <utility>

#include "server/codec/common_codec.hpp"
#include "server/codec/scan_begin_codec.hpp"
#include "server/tomop/tomop_codec.hpp"

namespace slicestream::tomop {

namespace {

TomopFeed::Outcome refuse(const char* why, std::string message, std::uint64_t scan_id = 0) {
  TomopFeed::Outcome outcome;
  outcome.refused = invalid(why, std::move(message));
  outcome.refused->scan_id = scan_id;
  return outcome;
}

template <typename Repeated>
void append(Repeated* out, const FloatView& values) {
  out->Reserve(static_cast<int>(values.count));
  for (std::size_t i = 0; i < values.count; ++i)
    out->Add(values.at(i));
}

// rows, cols and proj_count as the native ScanBegin carries them (unsigned, so checked first).
std::optional<WireError> check_sizes(std::int32_t rows, std::int32_t cols, std::int32_t count) {
  if (rows <= 0 || cols <= 0) {
    return invalid(wire_reason::kBadShape, "detector " + std::to_string(rows) + " x " +
                                               std::to_string(cols) + " must be at least 1 x 1");
  }
  if (count <= 0) {
    return invalid(wire_reason::kBadGeometry,
                   "proj_count " + std::to_string(count) + " must be at least 1");
  }
  return std::nullopt;
}

template <typename G>
v1::ScanBegin scan_begin_of(const G& g) {
  v1::ScanBegin begin;
  begin.set_detector_rows(static_cast<std::uint32_t>(g.rows));
  begin.set_detector_cols(static_cast<std::uint32_t>(g.cols));
  begin.set_projections_per_rotation(static_cast<std::uint32_t>(g.proj_count));
  begin.set_pixel_width_mm(1);
  begin.set_pixel_height_mm(1);
  return begin;
}

v1::ScanBegin wire_begin(const ParallelBeamGeometry& g) {
  v1::ScanBegin begin = scan_begin_of(g);
  append(begin.mutable_parallel()->mutable_angles_rad(), g.angles);
  return begin;
}

v1::ScanBegin wire_begin(const ConeBeamGeometry& g) {
  v1::ScanBegin begin = scan_begin_of(g);
  begin.set_pixel_width_mm(g.detector_size[0]);
  begin.set_pixel_height_mm(g.detector_size[1]);
  v1::ConeBeamGeometry* cone = begin.mutable_cone();
  append(cone->mutable_angles_rad(), g.angles);
  cone->set_source_origin_mm(g.source_origin);
  cone->set_origin_detector_mm(g.origin_det);
  return begin;
}

template <PacketId Id>
v1::ScanBegin wire_begin(const VecGeometry<Id>& g) {
  v1::ScanBegin begin = scan_begin_of(g);
  begin.mutable_vectors()->set_cone(Id == PacketId::kConeVecGeometry);
  append(begin.mutable_vectors()->mutable_vectors(), g.vectors);
  return begin;
}

template <typename P>
constexpr bool kIsGeometry =
    std::is_same_v<P, ParallelBeamGeometry> || std::is_same_v<P, ConeBeamGeometry> ||
    std::is_same_v<P, ParallelVecGeometry> || std::is_same_v<P, ConeVecGeometry>;

std::optional<FrameKind> frame_kind(std::int32_t type) {
  switch (type) {
    case Projection::kDark:
      return FrameKind::kDark;
    case Projection::kFlat:
      return FrameKind::kFlat;
    case Projection::kStandard:
      return FrameKind::kProjection;
    default:
      return std::nullopt;
  }
}

}  // namespace

TomopFeed::Outcome TomopFeed::handle(std::shared_ptr<const std::byte> message, std::size_t size,
                                     std::uint64_t arrival_ns) {
  Decoded<Packet> decoded = decode_packet(message.get(), size);
  if (!decoded.ok()) {
    TomopFeed::Outcome outcome;
    outcome.refused = decoded.error();
    return outcome;
  }
  const Packet& packet = decoded.value();
  if (const auto* p = std::get_if<Projection>(&packet))
    return on_projection(*p, message, arrival_ns);
  if (const auto* s = std::get_if<ScanSettings>(&packet)) return on_settings(*s);
  if (const auto* v = std::get_if<GeometrySpecification>(&packet)) return on_volume(*v);
  return on_geometry(packet, arrival_ns);
}

TomopFeed::Outcome TomopFeed::on_settings(const ScanSettings& settings) {
  if (settings.darks < 0 || settings.flats < 0) {
    return refuse(wire_reason::kBadValue, "ScanSettings: darks " + std::to_string(settings.darks) +
                                              " and flats " + std::to_string(settings.flats) +
                                              " must not be negative");
  }
  settings_ = settings;
  Outcome outcome;
  outcome.note = "ScanSettings for the next scan: " + std::to_string(settings.darks) + " darks, " +
                 std::to_string(settings.flats) + " flats" +
                 (settings.already_linear ? ", already linear" : "");
  return outcome;
}

TomopFeed::Outcome TomopFeed::on_volume(const GeometrySpecification& volume) {
  v1::VolumeBox box;
  box.mutable_min_mm()->set_x(volume.volume_min_point[0]);
  box.mutable_min_mm()->set_y(volume.volume_min_point[1]);
  box.mutable_min_mm()->set_z(volume.volume_min_point[2]);
  box.mutable_max_mm()->set_x(volume.volume_max_point[0]);
  box.mutable_max_mm()->set_y(volume.volume_max_point[1]);
  box.mutable_max_mm()->set_z(volume.volume_max_point[2]);
  Decoded<VolumeBox> checked = decode_volume_box(box);
  if (!checked.ok()) {
    Outcome outcome;
    outcome.refused = checked.error();
    outcome.refused->message = "GeometrySpecification: " + outcome.refused->message;
    return outcome;
  }
  volume_ = box;
  Outcome outcome;
  outcome.note = "GeometrySpecification: the box of the next scan";
  return outcome;
}

TomopFeed::Outcome TomopFeed::on_geometry(const Packet& packet, std::uint64_t arrival_ns) {
  return std::visit(
      [&](const auto& p) -> Outcome {
        using P = std::decay_t<decltype(p)>;
        const std::string name = packet_name(static_cast<std::int32_t>(P::kId));
        if constexpr (kIsGeometry<P>) {
          if (std::optional<WireError> problem = check_sizes(p.rows, p.cols, p.proj_count)) {
            problem->message = name + ": " + problem->message;
            Outcome outcome;
            outcome.refused = std::move(problem);
            return outcome;
          }
          return start_scan(wire_begin(p), name, arrival_ns);
        } else {
          return refuse(reason::kUnsupportedPacket,
                        name + " is not a packet of the data feed (the viewer's direction)");
        }
      },
      packet);
}

TomopFeed::Outcome TomopFeed::start_scan(v1::ScanBegin&& begin, const std::string& packet,
                                         std::uint64_t arrival_ns) {
  if (!volume_) {
    return refuse(reason::kNoVolume, packet +
                                         ": no GeometrySpecification (the reconstruction box) "
                                         "arrived before it");
  }
  const std::uint64_t scan_id = next_scan_id_++;
  begin.set_scan_id(scan_id);
  begin.set_pixel_type(v1::PIXEL_TYPE_FLOAT32);
  begin.set_dark_count(static_cast<std::uint32_t>(settings_.darks));
  begin.set_flat_count(static_cast<std::uint32_t>(settings_.flats));
  begin.set_already_linear(settings_.already_linear);
  *begin.mutable_volume() = *volume_;
  begin.set_description("tomop " + packet);
  Decoded<ScanDescription> scan = decode_scan_begin(begin, limits_);
  if (!scan.ok()) {
    Outcome outcome;
    outcome.refused = scan.error();
    outcome.refused->message = packet + ": " + outcome.refused->message;
    outcome.refused->scan_id = scan_id;
    return outcome;
  }
  active_ =
      ActiveScan{scan_id, scan.value().geometry.detector, scan.value().projections_per_rotation()};
  Outcome outcome;
  outcome.message = DataMessage(ScanBegin{std::move(scan.value()), arrival_ns});
  return outcome;
}

TomopFeed::Outcome TomopFeed::on_projection(const Projection& projection,
                                            const std::shared_ptr<const std::byte>& message,
                                            std::uint64_t arrival_ns) const {
  if (!active_) {
    return refuse("no_active_scan", "Projection " + std::to_string(projection.projection_id) +
                                        " before any geometry packet");
  }
  const std::uint64_t scan_id = active_->scan_id;
  const std::optional<FrameKind> kind = frame_kind(projection.type);
  if (!kind) {
    return refuse(wire_reason::kBadFrameKind,
                  "Projection type " + std::to_string(projection.type) +
                      " is none of 0 (dark), 1 (flat), 2 (standard)",
                  scan_id);
  }
  const DetectorShape& detector = active_->detector;
  if (projection.shape[0] != detector.rows || projection.shape[1] != detector.cols) {
    return refuse("shape_mismatch",
                  "Projection " + std::to_string(projection.projection_id) + " is " +
                      std::to_string(projection.shape[0]) + " x " +
                      std::to_string(projection.shape[1]) + ", the scan's detector " +
                      std::to_string(detector.rows) + " x " + std::to_string(detector.cols),
                  scan_id);
  }
  if (projection.data.count != detector.pixels()) {
    return refuse(wire_reason::kBadPayloadSize,
                  "Projection " + std::to_string(projection.projection_id) + " has " +
                      std::to_string(projection.data.count) + " values for " +
                      std::to_string(detector.pixels()) + " pixels",
                  scan_id);
  }
  if (projection.projection_id < 0) {
    return refuse("index_out_of_range",
                  "Projection id " + std::to_string(projection.projection_id) + " is negative",
                  scan_id);
  }
  RawFrame frame;
  frame.scan_id = scan_id;
  frame.kind = *kind;
  frame.index = static_cast<std::uint32_t>(projection.projection_id);
  if (*kind == FrameKind::kProjection) {
    frame.position = frame.index % static_cast<std::uint32_t>(active_->proj_count);
  }
  frame.arrival_ns = arrival_ns;
  frame.shape = detector;
  frame.pixel_type = PixelType::kFloat32;
  frame.payload_bytes = projection.data.count * sizeof(float);
  if (reinterpret_cast<std::uintptr_t>(projection.data.bytes) % alignof(float) == 0) {
    frame.payload = std::shared_ptr<const std::byte>(message, projection.data.bytes);
  } else {
    std::shared_ptr<std::byte[]> copy(new std::byte[frame.payload_bytes]);
    std::memcpy(copy.get(), projection.data.bytes, frame.payload_bytes);
    frame.payload = std::shared_ptr<const std::byte>(copy, copy.get());
  }
  Outcome outcome;
  outcome.message = DataMessage(std::move(frame));
  return outcome;
}

}  // namespace slicestream::tomop
