// The data direction of tomop (what the adapters send) mapped onto the native scan model.
//
// Pure: bytes in, a DataMessage for the pipeline or a refusal out; no sockets, no threads.
//   ScanSettings            darks, flats, already_linear for the scans that follow (16 or 17 bytes)
//   GeometrySpecification   the reconstruction box for the scans that follow
//   a geometry packet       starts a scan (ScanBegin: float32 pixels, the settings and box above),
//                           validated by the native ScanBegin codec against the WireLimits
//   Projection              type 0 dark / 1 flat / 2 standard of the active scan; a standard
//                           projection's id is cyclic: slot id mod proj_count, rotation id / count
// Units are SliceRecon's: parallel beam has 1 x 1 detector pixels (one world unit = one pixel),
// cone beam's detector_size is the pixel spacing. Adapters' scene ids are ignored (they send 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "kernels/geometry.hpp"
#include "pipeline/messages/data_message.hpp"
#include "server/codec/wire_error.hpp"
#include "server/codec/wire_limits.hpp"
#include "server/tomop/tomop_packets.hpp"
#include "slicestream.pb.h"

namespace slicestream::tomop {

namespace reason {
inline constexpr const char* kUnsupportedPacket = "unsupported_packet";  // not of the data feed
inline constexpr const char* kNoVolume = "no_volume";  // geometry before GeometrySpecification
}  // namespace reason

class TomopFeed {
 public:
  // tomop scans are numbered from here, far from the ids native detectors choose.
  static constexpr std::uint64_t kFirstScanId = std::uint64_t{1} << 40;

  explicit TomopFeed(const WireLimits& limits) : limits_(limits) {}

  struct Outcome {
    std::optional<DataMessage> message;  // for the pipeline
    std::optional<WireError> refused;    // a discard to count and report
    std::string note;                    // what a stored setting changed (logged)
  };

  // `message` holds the packet's `size` bytes; a Projection's pixels stay in it (shared).
  Outcome handle(std::shared_ptr<const std::byte> message, std::size_t size,
                 std::uint64_t arrival_ns);

  std::uint64_t active_scan_id() const { return active_ ? active_->scan_id : 0; }

 private:
  struct ActiveScan {
    std::uint64_t scan_id = 0;
    DetectorShape detector;
    int proj_count = 0;
  };

  Outcome on_settings(const ScanSettings& settings);
  Outcome on_volume(const GeometrySpecification& volume);
  Outcome start_scan(v1::ScanBegin&& begin, const std::string& packet, std::uint64_t arrival_ns);
  Outcome on_projection(const Projection& projection,
                        const std::shared_ptr<const std::byte>& message,
                        std::uint64_t arrival_ns) const;
  Outcome on_geometry(const Packet& packet, std::uint64_t arrival_ns);

  WireLimits limits_;
  ScanSettings settings_{0, 0, 0, false, true};
  std::optional<v1::VolumeBox> volume_;
  std::optional<ActiveScan> active_;
  std::uint64_t next_scan_id_ = kFirstScanId;
};

}  // namespace slicestream::tomop
