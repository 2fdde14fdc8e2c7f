#include "server/codec/data_codec.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "server/codec/enum_codec.hpp"
#include "server/codec/scan_begin_codec.hpp"

namespace slicestream {

namespace {

constexpr std::uint32_t kProtocolVersion = 1;

WireError with_scan(WireError error, std::uint64_t scan_id) {
  error.scan_id = scan_id;
  return error;
}

// The payload as a shared pointer into the ZeroMQ message itself (aliasing constructor: the
// message lives as long as any pointer to its bytes). Only if the transport handed us memory that
// is misaligned for the pixel type do we copy, once, into fresh (suitably aligned) memory.
std::shared_ptr<const std::byte> share_payload(zmq::message_t payload, PixelType type,
                                               DataDecodeInfo* info) {
  const auto address = reinterpret_cast<std::uintptr_t>(payload.data());
  if (address % pixel_bytes(type) != 0) {
    std::shared_ptr<std::byte[]> copy(new std::byte[payload.size()]);
    std::memcpy(copy.get(), payload.data(), payload.size());
    if (info) info->payload_realigned = true;
    return std::shared_ptr<const std::byte>(copy, copy.get());
  }
  auto holder = std::make_shared<zmq::message_t>(std::move(payload));
  return std::shared_ptr<const std::byte>(holder, static_cast<const std::byte*>(holder->data()));
}

Decoded<DataMessage> decode_scan_end(const v1::ScanEnd& wire, std::uint64_t arrival_ns) {
  ScanEnd end;
  end.scan_id = wire.scan_id();
  end.frames_sent = wire.frames_sent();
  end.arrival_ns = arrival_ns;
  return DataMessage(end);
}

const char* body_name(v1::DataHeader::BodyCase body) {
  switch (body) {
    case v1::DataHeader::kScanBegin:
      return "ScanBegin";
    case v1::DataHeader::kFrame:
      return "Frame";
    case v1::DataHeader::kScanEnd:
      return "ScanEnd";
    case v1::DataHeader::BODY_NOT_SET:
      break;
  }
  return "unknown";
}

}  // namespace

Decoded<RawFrame> decode_frame(const v1::Frame& wire, zmq::message_t payload,
                               const WireLimits& limits, DataDecodeInfo* info) {
  const std::string what =
      "Frame " + std::to_string(wire.index()) + " of scan " + std::to_string(wire.scan_id()) + ": ";
  auto fail = [&](const char* reason, const std::string& message) {
    return Decoded<RawFrame>(with_scan(invalid(reason, what + message), wire.scan_id()));
  };
  const std::optional<FrameKind> kind = frame_kind_from_wire(wire.kind());
  if (!kind) {
    return fail(wire_reason::kBadFrameKind,
                "kind " + std::to_string(wire.kind()) + " is not one of dark, flat, projection");
  }
  if (wire.rows() == 0 || wire.cols() == 0) {
    return fail(wire_reason::kBadShape, "rows and cols must be set (at least 1), got " +
                                            std::to_string(wire.rows()) + " x " +
                                            std::to_string(wire.cols()));
  }
  const auto max_side = static_cast<std::uint32_t>(limits.max_detector_side);
  if (wire.rows() > max_side || wire.cols() > max_side) {
    return fail(wire_reason::kOversized, std::to_string(wire.rows()) + " x " +
                                             std::to_string(wire.cols()) +
                                             " exceeds the limit of " + std::to_string(max_side) +
                                             " pixels per side (--max-detector-side)");
  }
  const std::optional<PixelType> pixel_type = pixel_type_from_wire(wire.pixel_type());
  if (!pixel_type) {
    return fail(wire_reason::kBadPixelType, "pixel_type " + std::to_string(wire.pixel_type()) +
                                                " is not one of uint16, uint32, float32");
  }
  if (wire.placement_case() == v1::Frame::kAngleRad && !std::isfinite(wire.angle_rad())) {
    return fail(wire_reason::kNonFinite, "angle_rad is not a finite number");
  }
  // rows and cols are bounded above, so this product cannot overflow.
  const std::size_t expected_bytes =
      std::size_t{wire.rows()} * std::size_t{wire.cols()} * pixel_bytes(*pixel_type);
  if (payload.size() > limits.max_frame_bytes || expected_bytes > limits.max_frame_bytes) {
    return fail(wire_reason::kOversized,
                "payload of " + std::to_string(payload.size()) + " bytes (" +
                    std::to_string(expected_bytes) + " declared) exceeds the limit of " +
                    std::to_string(limits.max_frame_bytes) + " bytes (--max-frame-bytes)");
  }
  if (payload.size() != expected_bytes) {
    return fail(wire_reason::kBadPayloadSize,
                "payload has " + std::to_string(payload.size()) + " bytes, but " +
                    std::to_string(wire.rows()) + " x " + std::to_string(wire.cols()) + " " +
                    to_string(*pixel_type) + " pixels need " + std::to_string(expected_bytes));
  }

  RawFrame frame;
  frame.scan_id = wire.scan_id();
  frame.kind = *kind;
  frame.index = wire.index();
  if (wire.placement_case() == v1::Frame::kPosition) frame.position = wire.position();
  if (wire.placement_case() == v1::Frame::kAngleRad) frame.angle_rad = wire.angle_rad();
  frame.detector_timestamp_ns = wire.timestamp_ns();
  frame.shape = {static_cast<int>(wire.rows()), static_cast<int>(wire.cols())};
  frame.pixel_type = *pixel_type;
  frame.payload_bytes = payload.size();
  frame.payload = share_payload(std::move(payload), *pixel_type, info);
  return frame;
}

Decoded<DataMessage> decode_data_message(std::vector<zmq::message_t>& parts, std::size_t part_count,
                                         std::uint64_t arrival_ns, const WireLimits& limits,
                                         DataDecodeInfo* info) {
  if (part_count == 0 || parts.empty()) {
    return invalid(wire_reason::kBadParts, "empty data message");
  }
  const zmq::message_t& header_part = parts.front();
  if (header_part.size() > limits.max_header_bytes) {
    return invalid(wire_reason::kOversized, "data header of " + std::to_string(header_part.size()) +
                                                " bytes exceeds the limit of " +
                                                std::to_string(limits.max_header_bytes) +
                                                " bytes (--max-header-bytes)");
  }
  v1::DataHeader header;
  if (!header.ParseFromArray(header_part.data(), static_cast<int>(header_part.size()))) {
    return invalid(wire_reason::kUndecodableHeader,
                   "the first part (" + std::to_string(header_part.size()) +
                       " bytes) is not a slicestream.v1.DataHeader protobuf");
  }
  if (header.protocol_version() != kProtocolVersion) {
    return invalid(wire_reason::kBadProtocolVersion,
                   "protocol_version " + std::to_string(header.protocol_version()) +
                       " is not supported (this server speaks version 1)");
  }
  const v1::DataHeader::BodyCase body = header.body_case();
  if (body == v1::DataHeader::BODY_NOT_SET) {
    return invalid(wire_reason::kUnknownKind,
                   "DataHeader carries none of ScanBegin, Frame, ScanEnd (unset or from a newer "
                   "protocol)");
  }
  const std::size_t expected_parts = body == v1::DataHeader::kFrame ? 2 : 1;
  if (part_count != expected_parts || parts.size() < expected_parts) {
    std::uint64_t scan_id = 0;
    if (body == v1::DataHeader::kScanBegin) scan_id = header.scan_begin().scan_id();
    if (body == v1::DataHeader::kFrame) scan_id = header.frame().scan_id();
    if (body == v1::DataHeader::kScanEnd) scan_id = header.scan_end().scan_id();
    return with_scan(
        invalid(wire_reason::kBadParts, std::string(body_name(body)) + " message must have " +
                                            std::to_string(expected_parts) + " part(s), got " +
                                            std::to_string(part_count)),
        scan_id);
  }
  switch (body) {
    case v1::DataHeader::kScanBegin: {
      Decoded<ScanDescription> scan = decode_scan_begin(header.scan_begin(), limits);
      if (!scan.ok()) return scan.error();
      return DataMessage(ScanBegin{std::move(scan.value()), arrival_ns});
    }
    case v1::DataHeader::kFrame: {
      Decoded<RawFrame> frame = decode_frame(header.frame(), std::move(parts[1]), limits, info);
      if (!frame.ok()) return frame.error();
      frame.value().arrival_ns = arrival_ns;
      return DataMessage(std::move(frame.value()));
    }
    case v1::DataHeader::kScanEnd:
      return decode_scan_end(header.scan_end(), arrival_ns);
    case v1::DataHeader::BODY_NOT_SET:
      break;
  }
  return invalid(wire_reason::kUnknownKind, "unknown DataHeader body");
}

}  // namespace slicestream
