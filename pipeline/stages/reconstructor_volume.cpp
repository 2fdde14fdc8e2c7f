// GetVolume: a chunk of z planes of a volume over the scan's box (or a sub-box), reconstructed
// from the current window by the same backend call as a one-shot slice (backproject_store on a
// grid of several planes), so both backends serve it without a kernel of their own.
#include <algorithm>
#include <cstdint>
#include <string>

#include "pipeline/stages/reconstructor.hpp"
#include "pipeline/stages/scan_validation.hpp"

namespace slicestream {
namespace {

CommandReply refusal(StatusCode code, std::string reason, std::string message) {
  CommandReply r;
  r.status = Status{code, std::move(message), std::move(reason)};
  return r;
}

// The z planes [first, first + count) of `box` divided into `size_z` planes.
VolumeBox plane_range(const VolumeBox& box, int size_z, int first, int count) {
  const double plane_mm = box.extent().z / size_z;
  VolumeBox part = box;
  part.min_mm.z = box.min_mm.z + first * plane_mm;
  part.max_mm.z = box.min_mm.z + (first + count) * plane_mm;
  return part;
}

}  // namespace

CommandReply Reconstructor::get_volume(const GetVolumeCommand& command) {
  const int side = config_.max_slice_side;
  if (command.size_x < 1 || command.size_y < 1 || command.size_z < 1 || command.size_x > side ||
      command.size_y > side || command.size_z > side) {
    return refusal(StatusCode::kInvalidArgument, "bad_shape",
                   "volume " + std::to_string(command.size_x) + " x " +
                       std::to_string(command.size_y) + " x " + std::to_string(command.size_z) +
                       ": every side must be 1.." + std::to_string(side));
  }
  if (command.first_plane < 0 || command.plane_count < 1 ||
      command.plane_count > command.size_z - command.first_plane) {
    return refusal(StatusCode::kInvalidArgument, "bad_plane_range",
                   "planes " + std::to_string(command.first_plane) + " + " +
                       std::to_string(command.plane_count) + " are not within the volume's " +
                       std::to_string(command.size_z));
  }
  // A chunk is never larger than the largest one-shot slice: that memory is already allowed.
  const std::uint64_t limit = static_cast<std::uint64_t>(side) * static_cast<std::uint64_t>(side);
  const std::uint64_t plane =
      static_cast<std::uint64_t>(command.size_x) * static_cast<std::uint64_t>(command.size_y);
  if (plane * static_cast<std::uint64_t>(command.plane_count) > limit) {
    return refusal(
        StatusCode::kResourceExhausted, "volume_chunk_too_large",
        std::to_string(command.plane_count) + " planes of " + std::to_string(command.size_x) +
            " x " + std::to_string(command.size_y) + " exceed the " + std::to_string(limit) +
            " voxels a chunk may hold (max_slice_side^2): ask for at most " +
            std::to_string(std::max<std::uint64_t>(limit / plane, 1)) + " planes at a time");
  }
  if (!store_ready_) {
    return refusal(StatusCode::kFailedPrecondition, "no_scan",
                   "no scan has started: no projections to use");
  }
  const VolumeBox box = command.box.value_or(scan_.volume);
  const std::string bad_box = volume_box_problem(box);
  if (!bad_box.empty()) return refusal(StatusCode::kInvalidArgument, "bad_volume", bad_box);

  // The chunk's values are charged before anything is allocated, like a GetSlice's image.
  const std::size_t chunk_bytes =
      static_cast<std::size_t>(plane * static_cast<std::uint64_t>(command.plane_count)) *
      sizeof(float);
  std::shared_ptr<MemoryCharge> memory = backend_.host_memory()->try_charge(chunk_bytes);
  if (!memory) {
    return refusal(StatusCode::kResourceExhausted, "memory_budget",
                   backend_.host_memory()->shortfall(chunk_bytes, "this GetVolume chunk"));
  }
  const VolumeBox part = plane_range(box, command.size_z, command.first_plane, command.plane_count);
  std::unique_ptr<ReconTarget> target;
  try {
    target = backend_.create_target(
        volume_grid(part, command.size_x, command.size_y, command.plane_count));
  } catch (const BackendError& e) {
    return refusal(StatusCode::kResourceExhausted, "out_of_memory",
                   std::string(e.what()) + " (ask for fewer planes at a time)");
  }
  VolumeChunk chunk;
  chunk.scan_id = scan_.scan_id;
  chunk.box = box;
  chunk.size_x = command.size_x;
  chunk.size_y = command.size_y;
  chunk.size_z = command.size_z;
  chunk.first_plane = command.first_plane;
  chunk.plane_count = command.plane_count;
  chunk.projections_integrated = content_.projections_integrated;
  chunk.filter = params_.filter;
  chunk.values = reconstruct_window(*target);
  chunk.memory = std::move(memory);
  CommandReply r;
  r.status = Status{StatusCode::kOk,
                    "planes " + std::to_string(command.first_plane) + ".." +
                        std::to_string(command.first_plane + command.plane_count - 1) + " of " +
                        std::to_string(command.size_z) + " from " +
                        std::to_string(content_.projections_integrated) + " projections of scan " +
                        std::to_string(scan_.scan_id),
                    {}};
  r.volume = std::move(chunk);
  return r;
}

}  // namespace slicestream
