// Where the pipeline's results go: server/ implements it with the PUB socket, tests with a
// recorder. Called from the publish stage thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/geometry.hpp"
#include "pipeline/messages/command.hpp"

namespace slicestream {

struct PreviewVolume {
  std::uint64_t scan_id = 0;
  VolumeBox box;
  int size_x = 0, size_y = 0, size_z = 0;
  std::uint64_t projections_integrated = 0;
  std::uint64_t sequence = 0;
  std::vector<float> values;             // x fastest, z slowest
  std::shared_ptr<MemoryCharge> memory;  // as SliceImage::memory
};

// A live slice refined from its FBP image (SetRefinement): its own stream, published
// beside the slice's FBP stream (server topic "refined"). slice.sequence counts the slice's
// refined publications; slice.projections_integrated and the timestamps are those of the FBP
// image the refinement started from.
struct RefinedSliceImage {
  SliceImage slice;
  int iterations = 0;          // iterations run
  double residual_before = 0;  // ||A x_fbp - b|| / ||b|| of the FBP image
  double residual_after = 0;   // ||A x - b|| / ||b|| of the refined image
  double duration_ms = 0;      // wall time on the refinement worker (a matrix build included)
  std::string solver;          // "cpu csr fp32", "cuda tensor-core fp16 ..."
  RefinementSummary summary;   // method, regulariser, why it stopped, noise level
};

enum class EventKind { kScanStarted, kScanEnded, kError, kWarning };
const char* to_string(EventKind kind);

// Where a started scan lives, for sinks that place slices themselves (the RECAST3D bridge maps
// its viewer's normalised slices to the box).
struct StartedScan {
  VolumeBox volume;
  DetectorShape detector;
};

struct ServerEvent {
  ServerEvent() = default;
  ServerEvent(EventKind kind_, std::uint64_t scan_id_, std::string reason_, std::string message_,
              std::optional<StartedScan> started_ = std::nullopt)
      : kind(kind_),
        scan_id(scan_id_),
        reason(std::move(reason_)),
        message(std::move(message_)),
        started(std::move(started_)) {}

  EventKind kind = EventKind::kError;
  std::uint64_t scan_id = 0;
  std::string reason;   // machine-readable discard/error reason ("bad_shape", ...) or empty
  std::string message;  // human-readable
  std::optional<StartedScan> started;  // kScanStarted only
};

class PublishSink {
 public:
  virtual ~PublishSink() = default;
  virtual void publish_slice(const SliceImage& slice) = 0;
  // The publish stage hands its image over: a sink that keeps the values past the call (the
  // slices endpoint's outgoing message) shares them, and their memory charge, instead of copying
  // them. Sinks that only read them during the call need not override this.
  virtual void publish_shared_slice(std::shared_ptr<const SliceImage> slice) {
    publish_slice(*slice);
  }
  virtual void publish_preview(const PreviewVolume& preview) = 0;
  virtual void publish_refined(const RefinedSliceImage& refined) = 0;
  virtual void publish_event(const ServerEvent& event) = 0;
};

}  // namespace slicestream
