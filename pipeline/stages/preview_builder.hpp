// The low-resolution preview volume, rebuilt from the projection store in small units of work
// (a slab of planes x a chunk of slots) that the reconstruct stage interleaves with frames.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "pipeline/backend/backend.hpp"
#include "pipeline/messages/publish_sink.hpp"

namespace slicestream {

class PreviewBuilder {
 public:
  // Work per unit (voxels x projections): a few milliseconds on the CPU backend, so that a frame
  // arriving during a unit waits little.
  static constexpr std::size_t kSamplesPerUnit = std::size_t{1} << 20;

  PreviewBuilder(Backend& backend, int size) : backend_(backend), size_(size) {}

  // Allocates the volume for a scan (throws BackendError); size 0 disables the preview.
  void begin_scan(const VolumeBox& box, int window);
  void end_scan();
  bool enabled() const { return target_ != nullptr; }

  bool building() const { return building_; }
  void start();
  void cancel() { building_ = false; }
  // One unit of work; true when the volume is complete (then take_result()).
  bool run_unit(float scale);
  PreviewVolume take_result(std::uint64_t scan_id, std::uint64_t projections_integrated);
  // The host memory take_result's volume takes.
  std::size_t result_bytes() const {
    return static_cast<std::size_t>(size_) * static_cast<std::size_t>(size_) *
           static_cast<std::size_t>(size_) * sizeof(float);
  }

 private:
  Backend& backend_;
  const int size_;
  std::unique_ptr<ReconTarget> target_;
  VolumeBox box_;
  std::vector<int> slots_;  // 0 .. window-1
  int planes_per_unit_ = 1;
  int slots_per_unit_ = 1;
  bool building_ = false;
  int plane_ = 0;
  int slot_begin_ = 0;
  std::uint64_t sequence_ = 0;
};

}  // namespace slicestream
