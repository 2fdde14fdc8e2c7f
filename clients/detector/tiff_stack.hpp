// TIFF scans: projections, darks and flats each as a directory, glob or file of 2D TIFFs; every
// page of a multi-page TIFF is one frame. Single-channel integer or float images of any
// compression libtiff reads, striped or tiled. Read one frame at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clients/detector/recorded_scan.hpp"

namespace slicestream::detector {

struct TiffStackPaths {
  std::string projections;  // required
  std::string darks;        // optional ("" = none)
  std::string flats;        // optional
};

// Frames are delivered as uint16 (8- and 16-bit unsigned files), uint32 (32-bit unsigned) or
// float32 (signed integers and floating point), decided by the first projection; darks and
// flats are converted to the same type.
class TiffStack final : public RecordedScan {
 public:
  // Opens every file once to count its pages and check shapes; throws std::runtime_error.
  explicit TiffStack(const TiffStackPaths& paths);
  ~TiffStack() override;
  TiffStack(const TiffStack&) = delete;
  TiffStack& operator=(const TiffStack&) = delete;

  DetectorShape shape() const override { return shape_; }
  PixelType pixel_type() const override { return pixel_type_; }
  std::size_t count(FrameKind kind) const override;
  std::optional<std::vector<double>> angles_deg() const override { return std::nullopt; }
  void read(FrameKind kind, std::size_t index, PixelBuffer& out) override;
  std::string describe() const override;

 private:
  struct Page {
    std::size_t file;
    int page;
  };
  struct OpenFile;

  void index_files(FrameKind kind, const std::string& pattern);
  OpenFile& open(std::size_t file);

  std::vector<std::string> files_;
  std::vector<Page> pages_[3];  // indexed by FrameKind
  DetectorShape shape_;
  PixelType pixel_type_ = PixelType::kUint16;
  std::string projections_pattern_;
  std::unique_ptr<OpenFile> open_file_;  // the last file read: multi-page files stay open
};

}  // namespace slicestream::detector
