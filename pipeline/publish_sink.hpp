// Where the pipeline's results go: server/ implements it with the PUB socket, tests with a
// recorder. Called from the publish stage thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/geometry.hpp"
#include "pipeline/command.hpp"

namespace slicestream {

struct PreviewVolume {
  std::uint64_t scan_id = 0;
  VolumeBox box;
  int size_x = 0, size_y = 0, size_z = 0;
  std::uint64_t projections_integrated = 0;
  std::uint64_t sequence = 0;
  std::vector<float> values;  // x fastest, z slowest
};

enum class EventKind { kScanStarted, kScanEnded, kError, kWarning };
const char* to_string(EventKind kind);

struct ServerEvent {
  EventKind kind = EventKind::kError;
  std::uint64_t scan_id = 0;
  std::string reason;   // machine-readable discard/error reason ("bad_shape", ...) or empty
  std::string message;  // human-readable
};

class PublishSink {
 public:
  virtual ~PublishSink() = default;
  virtual void publish_slice(const SliceImage& slice) = 0;
  virtual void publish_preview(const PreviewVolume& preview) = 0;
  virtual void publish_event(const ServerEvent& event) = 0;
};

}  // namespace slicestream
