// DXchange (APS Data Exchange) HDF5 scans: /exchange/data (projections, frames x rows x cols),
// /exchange/data_white (flats), /exchange/data_dark (darks), /exchange/theta (degrees). Every
// dataset but data may be missing. Read frame by frame with hyperslabs through the HDF5 C API.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clients/detector/recorded_scan.hpp"

namespace slicestream::hdf5 {
class Handle;
}

namespace slicestream::detector {

struct DxchangeLayout {
  std::string projections = "/exchange/data";
  std::string flats = "/exchange/data_white";
  std::string darks = "/exchange/data_dark";
  std::string theta_deg = "/exchange/theta";
};

class DxchangeFile final : public RecordedScan {
 public:
  // Throws std::runtime_error with a clear message for a missing, unreadable or malformed file.
  explicit DxchangeFile(const std::string& path, const DxchangeLayout& layout = {});
  ~DxchangeFile() override;
  DxchangeFile(const DxchangeFile&) = delete;
  DxchangeFile& operator=(const DxchangeFile&) = delete;

  DetectorShape shape() const override { return shape_; }
  PixelType pixel_type() const override { return pixel_type_; }
  std::size_t count(FrameKind kind) const override;
  std::optional<std::vector<double>> angles_deg() const override { return angles_deg_; }
  void read(FrameKind kind, std::size_t index, PixelBuffer& out) override;
  std::string describe() const override;

  // A 1D dataset as numbers / as raw bytes; nullopt when the file has none at that path. Throws
  // std::runtime_error for one of another shape or type.
  std::optional<std::vector<double>> read_numbers(const std::string& dataset) const;
  std::optional<std::string> read_bytes(const std::string& dataset) const;

 private:
  struct Dataset;
  Dataset& dataset(FrameKind kind);

  std::string path_;
  std::unique_ptr<hdf5::Handle> file_;    // declared before the datasets: closed after them
  std::unique_ptr<Dataset> datasets_[3];  // indexed by FrameKind
  DetectorShape shape_;
  PixelType pixel_type_ = PixelType::kUint16;
  std::optional<std::vector<double>> angles_deg_;
};

}  // namespace slicestream::detector
