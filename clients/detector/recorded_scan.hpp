// A recorded scan on disk (DXchange HDF5, TIFF stack) read one frame at a time: never the whole
// scan in memory. Implementations are used from one thread at a time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "clients/detector/frame_source.hpp"
#include "clients/detector/pixel_buffer.hpp"

namespace slicestream::detector {

class RecordedScan {
 public:
  virtual ~RecordedScan() = default;
  virtual DetectorShape shape() const = 0;
  // The wire type every frame (darks and flats too) is delivered in.
  virtual PixelType pixel_type() const = 0;
  virtual std::size_t count(FrameKind kind) const = 0;
  // Projection angles stored with the scan, in degrees; nullopt when the file has none.
  virtual std::optional<std::vector<double>> angles_deg() const = 0;
  // Reads frame `index` of `kind` into `out` (shaped shape(), type pixel_type()), rows in file
  // order. Throws std::runtime_error naming the file and frame on failure.
  virtual void read(FrameKind kind, std::size_t index, PixelBuffer& out) = 0;
  // For logs: "file.h5: 1500 projections 2048x2048 uint16, 20 flats, 10 darks".
  virtual std::string describe() const = 0;
};

}  // namespace slicestream::detector
