// Upper bounds on every size that arrives from the wire (configurable: --max-* flags).
#pragma once

#include <cstddef>

namespace slicestream {

struct WireLimits {
  int max_detector_side = 16384;             // detector rows and columns
  int max_projections_per_rotation = 65536;  // angles / vectors of one rotation
  int max_calibration_frames = 4096;         // declared darks and flats, each
  std::size_t max_frame_bytes = 512u << 20;  // one frame's pixel payload
  std::size_t max_header_bytes = 16u << 20;  // a DataHeader (vector geometries are the largest)
  int max_slice_side = 8192;                 // SetSlice / GetSlice width and height
  std::size_t max_request_bytes = 1u << 20;  // a Request message
  std::size_t max_text_bytes = 4096;         // a string field (scan description, names, ...)
  // GetSlice results queued for one requester that has not read them (requester_backlog.hpp):
  // two slices of the largest side by default.
  std::size_t max_reply_backlog_bytes = std::size_t{512} << 20;
};

}  // namespace slicestream
