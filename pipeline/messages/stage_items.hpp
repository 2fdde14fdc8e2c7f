// What travels between the stage threads (internal to the pipeline).
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "pipeline/backend/backend.hpp"
#include "pipeline/messages/command.hpp"
#include "pipeline/messages/data_message.hpp"
#include "pipeline/messages/publish_sink.hpp"

namespace slicestream {

// wait_idle(): travels behind everything submitted before it and is fulfilled by the publish
// stage. A marker destroyed unfulfilled (shutdown) breaks the promise, which also ends the wait.
struct FlushMarker {
  std::shared_ptr<std::promise<void>> done;
};

using IngestItem = std::variant<ScanBegin, RawFrame, ScanEnd, FlushMarker>;

// Where a projection goes in the window, decided by ingest (it sees every frame in order).
struct ProjectionPlacement {
  int slot = 0;
  std::uint64_t rotation = 0;  // which rotation of the scan the projection belongs to
  ProjectionVector vector;     // as the scan describes it (before a rotation-axis correction)
};

struct FrameMeta {
  std::uint64_t scan_id = 0;
  std::uint32_t index = 0;
  std::uint64_t detector_timestamp_ns = 0;
  std::uint64_t arrival_ns = 0;
};

// Executed by the reconstruct stage (which owns the backend's scan state); ingest waits for the
// outcome before it sends the scan's frames.
struct ScanStartItem {
  ScanDescription scan;
  std::promise<Status> started;
};
struct CalibrationItem {
  std::uint64_t scan_id = 0;
  std::vector<float> dark;  // averaged; empty = none taken
  std::vector<float> flat;
  std::promise<Status> applied;
};
// Detector rows of a preprocessed projection, read before the filter (slice refinement fits
// them): the rows the reconstruct stage asked for (DetectorRowSelection) when it was preprocessed.
struct CapturedRows {
  std::vector<int> rows;      // ascending
  std::vector<float> values;  // rows.size() x detector cols
};

struct ProjectionItem {
  FrameMeta meta;
  ProjectionPlacement placement;
  RawFrame raw;                              // released after preprocessing
  std::unique_ptr<ProjectionBuffer> buffer;  // set by preprocess
  CapturedRows captured;                     // set by preprocess when rows are selected
};
struct ScanEndItem {
  std::uint64_t scan_id = 0;
  std::string why;  // "ScanEnd received", "superseded by scan 7", ...
};
struct CommandItem {
  Command command;
  ReplyCallback on_reply;
};

using StageItem = std::variant<ScanStartItem, CalibrationItem, ProjectionItem, ScanEndItem,
                               FlushMarker, CommandItem>;

struct SlicePublication {
  SliceImage image;  // values empty while `readback` is set
  // The slice's values on their way to the host; the publish stage waits for them and moves them
  // into image.values.
  std::unique_ptr<TargetReadback> readback;
  std::vector<std::uint64_t> arrivals_ns;  // frames published here for the first time
  // The order in which the reconstruct stage queued it (1, 2, ...): a moved image overtakes the
  // queue, and the older images of its slice still queued behind it are not published after it.
  std::uint64_t order = 0;
};

using PublishItem =
    std::variant<SlicePublication, PreviewVolume, ServerEvent, FlushMarker, RefinedSliceImage>;

}  // namespace slicestream
