// Writes one captured scan as a DXchange HDF5 file, the layout `slicestream-detector replay hdf5`
// reads (clients/detector/dxchange_file.hpp):
//   /exchange/data, /exchange/data_dark, /exchange/data_white   frames x rows x cols, the wire's
//                                  pixel type (uint16, uint32 or float32), rows as received
//   /exchange/theta                degrees per projection (circular geometries only)
// and what a replay needs to send the scan exactly as the detector did:
//   /slicestream/data_header       the ScanBegin's DataHeader as received (protobuf bytes, uint8)
//   /slicestream/projection_index, projection_position (-1: placed by angle),
//   /slicestream/projection_angle_rad (NaN: placed by slot), projection_timestamp_ns
//   attributes of /slicestream: scan_id, complete (1 when the scan ended and nothing was dropped),
//   frames_dropped, frames_skipped, end_reason
// Frames are appended one at a time (chunks of one frame); nothing is held in memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "pipeline/messages/data_message.hpp"

namespace slicestream {

struct CaptureSummary {
  bool scan_ended = false;           // the scan's ScanEnd arrived while recording
  std::uint64_t frames_dropped = 0;  // not taken by the writer queue
  std::string end_reason;            // "scan_end", "stopped", "next_scan", "shutdown"
};

class DxchangeWriter {
 public:
  // Creates `path` (never overwrites) for the scan whose DataHeader bytes are `data_header`.
  // Throws std::runtime_error naming the file on failure.
  DxchangeWriter(const std::string& path, const std::string& data_header);
  ~DxchangeWriter();
  DxchangeWriter(const DxchangeWriter&) = delete;
  DxchangeWriter& operator=(const DxchangeWriter&) = delete;

  // False when the frame is not of this scan (other scan id, shape or pixel type): not written.
  // Throws std::runtime_error on a write failure.
  bool append(const RawFrame& frame);
  // Writes the summary attributes and closes the file.
  void finish(const CaptureSummary& summary);

  std::uint64_t scan_id() const;
  std::uint64_t frames_written() const { return frames_written_; }
  std::uint64_t frames_skipped() const { return frames_skipped_; }
  const std::string& path() const { return path_; }

 private:
  struct File;
  std::string path_;
  std::unique_ptr<File> file_;
  std::uint64_t frames_written_ = 0;
  std::uint64_t frames_skipped_ = 0;
};

}  // namespace slicestream
