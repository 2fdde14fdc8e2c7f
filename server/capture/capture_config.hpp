// How the server captures scans (server/capture/README.md, docs/operations.md "Capture").
#pragma once

#include <cstddef>
#include <string>

namespace slicestream {

struct CaptureConfig {
  // Where capture files go; empty: no capture (SetCapture is refused, nothing is buffered).
  std::string directory;
  // Record every scan from its ScanBegin (--capture DIR) instead of only between SetCapture
  // start and stop (--capture-dir DIR).
  bool every_scan = false;
  // Frames kept before a start, by pixel bytes: the scan's darks and flats first, then its newest
  // projections.
  std::size_t pretrigger_bytes = std::size_t{256} << 20;
  // Pixel bytes waiting for the writer thread; a frame that does not fit is dropped and counted,
  // never waited for.
  std::size_t queue_bytes = std::size_t{1} << 30;
};

}  // namespace slicestream
