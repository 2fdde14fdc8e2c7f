#include "pipeline/stages/preview_builder.hpp"

#include <algorithm>
#include <numeric>

namespace slicestream {

void PreviewBuilder::begin_scan(const VolumeBox& box, int window) {
  end_scan();
  if (size_ <= 0) return;
  box_ = box;
  target_ = backend_.create_target(volume_grid(box, size_, size_, size_));
  slots_.resize(static_cast<std::size_t>(window));
  std::iota(slots_.begin(), slots_.end(), 0);
  const std::size_t plane_points =
      static_cast<std::size_t>(size_) * static_cast<std::size_t>(size_);
  slots_per_unit_ = static_cast<int>(
      std::clamp<std::size_t>(kSamplesPerUnit / plane_points, 1, static_cast<std::size_t>(window)));
  planes_per_unit_ = static_cast<int>(std::clamp<std::size_t>(
      kSamplesPerUnit / (plane_points * static_cast<std::size_t>(slots_per_unit_)), 1,
      static_cast<std::size_t>(size_)));
}

void PreviewBuilder::end_scan() {
  target_.reset();
  building_ = false;
}

void PreviewBuilder::start() {
  if (!target_) return;
  building_ = true;
  plane_ = 0;
  slot_begin_ = 0;
}

bool PreviewBuilder::run_unit(float scale) {
  if (!building_ || !target_) return false;
  const int plane_end = std::min(size_, plane_ + planes_per_unit_);
  const int slot_end = std::min(static_cast<int>(slots_.size()), slot_begin_ + slots_per_unit_);
  const std::vector<int> chunk(slots_.begin() + slot_begin_, slots_.begin() + slot_end);
  backend_.backproject_store(chunk, *target_, scale, /*accumulate=*/slot_begin_ > 0, plane_,
                             plane_end);
  slot_begin_ = slot_end;
  if (slot_begin_ >= static_cast<int>(slots_.size())) {
    slot_begin_ = 0;
    plane_ = plane_end;
  }
  if (plane_ < size_) return false;
  building_ = false;
  return true;
}

PreviewVolume PreviewBuilder::take_result(std::uint64_t scan_id,
                                          std::uint64_t projections_integrated) {
  PreviewVolume preview;
  preview.scan_id = scan_id;
  preview.box = box_;
  preview.size_x = preview.size_y = preview.size_z = size_;
  preview.projections_integrated = projections_integrated;
  preview.sequence = ++sequence_;
  preview.values.resize(target_->grid().points());
  backend_.read_target(*target_, preview.values.data());
  return preview;
}

}  // namespace slicestream
