// Replays a scan captured by slicestream-server (--capture, SetCapture): the DXchange frames plus
// the server's /slicestream group (the ScanBegin as the detector sent it, each projection's slot
// or angle), so the server gets the same scan again and reconstructs the same slices. Geometry
// flags do not apply: the captured ScanBegin is the geometry (--ignore-capture replays the file
// as plain DXchange with the flags instead).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clients/detector/dxchange_file.hpp"
#include "clients/detector/frame_source.hpp"

namespace slicestream::detector {

// The server's capture group and what it holds (server/capture/dxchange_writer.hpp).
inline constexpr const char* kCaptureDataHeader = "/slicestream/data_header";
inline constexpr const char* kCapturePositions = "/slicestream/projection_position";
inline constexpr const char* kCaptureAnglesRad = "/slicestream/projection_angle_rad";

class CaptureReplaySource final : public FrameSource {
 public:
  static bool is_capture(const DxchangeFile& file);
  // Throws std::runtime_error for a capture that is malformed (a clear message naming the
  // dataset). An empty description keeps the captured one.
  CaptureReplaySource(std::unique_ptr<DxchangeFile> file, const std::string& description);

  const v1::ScanBegin& scan_begin() const override { return scan_begin_; }
  FrameSequence sequence() const override { return sequence_; }
  OutgoingFrame render(std::uint64_t frame) override;
  int max_parallel_renders() const override { return 1; }  // one file reader

  const DxchangeFile& recording() const { return *file_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::unique_ptr<DxchangeFile> file_;
  v1::ScanBegin scan_begin_;
  std::vector<double> positions_;  // per projection: its slot, or -1 when placed by angle
  std::vector<double> angles_rad_;
  FrameSequence sequence_;
  std::vector<std::string> warnings_;
};

}  // namespace slicestream::detector
