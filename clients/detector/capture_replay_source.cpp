#include "clients/detector/capture_replay_source.hpp"

#include <cmath>
#include <stdexcept>

namespace slicestream::detector {

bool CaptureReplaySource::is_capture(const DxchangeFile& file) {
  return file.read_bytes(kCaptureDataHeader).has_value();
}

CaptureReplaySource::CaptureReplaySource(std::unique_ptr<DxchangeFile> file,
                                         const std::string& description)
    : file_(std::move(file)) {
  const std::optional<std::string> header_bytes = file_->read_bytes(kCaptureDataHeader);
  v1::DataHeader header;
  if (!header_bytes || !header.ParseFromString(*header_bytes) || !header.has_scan_begin()) {
    throw std::runtime_error(std::string(kCaptureDataHeader) + " is not a captured ScanBegin");
  }
  scan_begin_ = header.scan_begin();
  if (!description.empty()) scan_begin_.set_description(description);
  std::optional<std::vector<double>> positions = file_->read_numbers(kCapturePositions);
  std::optional<std::vector<double>> angles = file_->read_numbers(kCaptureAnglesRad);
  const std::size_t projections = file_->count(FrameKind::kProjection);
  if (!positions || !angles || positions->size() != projections || angles->size() != projections) {
    throw std::runtime_error(std::string("the capture's ") + kCapturePositions + " and " +
                             kCaptureAnglesRad + " must hold one value per projection (" +
                             std::to_string(projections) + ")");
  }
  positions_ = std::move(*positions);
  angles_rad_ = std::move(*angles);
  if (file_->count(FrameKind::kProjection) == 0) {
    throw std::runtime_error("the capture has no projections");
  }
  sequence_ = {file_->count(FrameKind::kDark), file_->count(FrameKind::kFlat),
               file_->count(FrameKind::kProjection)};
  // A capture started late holds what the pre-trigger buffer kept: say what differs.
  if (sequence_.darks != scan_begin_.dark_count() || sequence_.flats != scan_begin_.flat_count()) {
    warnings_.push_back("the scan announced " + std::to_string(scan_begin_.dark_count()) +
                        " darks and " + std::to_string(scan_begin_.flat_count()) +
                        " flats; the capture holds " + std::to_string(sequence_.darks) + " and " +
                        std::to_string(sequence_.flats));
  }
  scan_begin_.set_dark_count(static_cast<std::uint32_t>(sequence_.darks));
  scan_begin_.set_flat_count(static_cast<std::uint32_t>(sequence_.flats));
  scan_begin_.set_scan_id(0);  // the streamer's
  for (std::size_t i = 0; i < positions_.size(); ++i) {
    const bool by_slot = positions_[i] >= 0;
    if ((by_slot && positions_[i] >= scan_begin_.projections_per_rotation()) ||
        (!by_slot && !std::isfinite(angles_rad_[i]))) {
      throw std::runtime_error("captured projection " + std::to_string(i) +
                               " has neither a valid slot nor an angle");
    }
  }
}

OutgoingFrame CaptureReplaySource::render(std::uint64_t frame) {
  OutgoingFrame out;
  out.kind = sequence_.kind_of(frame);
  const std::uint64_t index = sequence_.index_within_kind(frame);
  out.index = static_cast<std::uint32_t>(index);
  if (out.kind == FrameKind::kProjection) {
    if (positions_[index] >= 0) {
      out.position = static_cast<std::uint32_t>(positions_[index]);
    } else {
      out.angle_rad = angles_rad_[index];
    }
  }
  auto pixels = std::make_shared<PixelBuffer>(file_->pixel_type(), file_->shape());
  file_->read(out.kind, static_cast<std::size_t>(index), *pixels);
  out.pixels = std::move(pixels);
  return out;
}

}  // namespace slicestream::detector
