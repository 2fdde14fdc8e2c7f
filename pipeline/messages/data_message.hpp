// Messages of the data path, decoded from the wire by server/ (no ZeroMQ or protobuf types here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <variant>

#include "pipeline/messages/scan_description.hpp"

namespace slicestream {

struct RawFrame {
  std::uint64_t scan_id = 0;
  FrameKind kind = FrameKind::kProjection;
  // Running number within its kind (darks 0.., flats 0.., projections 0..).
  std::uint32_t index = 0;
  // Where a projection was taken: a slot of the rotation, or an explicit angle (circular
  // geometries only; the window then keeps the last N projections).
  std::optional<std::uint32_t> position;
  std::optional<double> angle_rad;
  std::uint64_t detector_timestamp_ns = 0;  // the detector's clock, passed through to viewers
  std::uint64_t arrival_ns = 0;             // server steady clock when the message arrived
  DetectorShape shape;
  PixelType pixel_type = PixelType::kUint16;
  // The pixel payload, shared with the transport's buffer (never copied into a protobuf).
  std::shared_ptr<const std::byte> payload;
  std::size_t payload_bytes = 0;

  FrameView view() const { return {payload.get(), pixel_type, shape}; }
};

struct ScanBegin {
  ScanDescription scan;
  std::uint64_t arrival_ns = 0;
};

struct ScanEnd {
  std::uint64_t scan_id = 0;
  std::uint64_t frames_sent = 0;  // as counted by the sender; 0 = unknown
  std::uint64_t arrival_ns = 0;
};

using DataMessage = std::variant<ScanBegin, RawFrame, ScanEnd>;

}  // namespace slicestream
