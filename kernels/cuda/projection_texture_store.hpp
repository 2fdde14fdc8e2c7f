// The window of filtered projections on the GPU (issue 3, item 3).
//
// Slots live in layered CUDA arrays, each bound to its texture objects for the lifetime of the
// scan; an arriving projection overwrites its layer in place (cudaMemcpy3DAsync from the filtered
// device buffer), nothing is re-created or re-uploaded. One array holds up to the device's layer
// limit (maxTexture2DLayered[2], 2048 on current GPUs); longer windows continue in further arrays
// behind the same slot -> (array, layer) interface. A scratch array of one layer holds what the
// incremental update backprojects besides the slot itself (new - old, or the old projection).
//
// Each array has two texture objects over the same data: hardware bilinear filtering (fast, but
// its weights have 8 fractional bits) and point sampling (exact texel values, also used by texture
// gather), and a surface object for in-kernel reads and writes. Optionally every slot is mirrored
// in linear memory for interpolation through the L1 cache (see BackprojectInterpolation).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/frame_view.hpp"

namespace slicestream::cuda {

struct ProjectionStoreOptions {
  int max_layers_per_array = 0;  // 0: the device's limit; tests lower it to exercise several arrays
  bool linear_mirror = false;    // keep a copy of each slot in linear memory (costs 2x memory)
  bool texture_gather = true;    // ask for gather support (falls back when the driver refuses)
};

// Where one stored projection (or the scratch layer) can be read from.
struct TextureRef {
  cudaTextureObject_t filtered = 0;  // bilinear filtering in hardware
  cudaTextureObject_t point = 0;     // point sampling and gather
  int layer = 0;
  const float* linear = nullptr;  // rows x cols floats when the store keeps a linear mirror
};

class ProjectionTextureStore {
 public:
  ProjectionTextureStore(int device, DetectorShape shape, int slots,
                         const ProjectionStoreOptions& options = {});
  ~ProjectionTextureStore();
  ProjectionTextureStore(const ProjectionTextureStore&) = delete;
  ProjectionTextureStore& operator=(const ProjectionTextureStore&) = delete;

  // Device memory the store will take, computed before allocating (the memory budget).
  static std::size_t device_bytes(DetectorShape shape, int slots,
                                  const ProjectionStoreOptions& options);
  // Layers per array this device allows, and why a shape cannot be stored ("" when it can).
  static int device_layer_limit(int device);
  static std::string unsupported_reason(int device, DetectorShape shape);

  DetectorShape shape() const { return shape_; }
  int slots() const { return slots_; }
  int layers_per_array() const { return layers_per_array_; }
  int array_count() const { return static_cast<int>(arrays_.size()); }
  bool gather_supported() const { return gather_supported_; }
  bool has_linear_mirror() const { return !mirror_.empty(); }

  TextureRef slot_ref(int slot) const;
  TextureRef scratch_ref() const;

  // Overwrites `slot` in place with `projection` (device, rows x cols floats, row-major).
  void write_slot(int slot, const float* projection, cudaStream_t stream);
  // Copies `slot` into device memory `out` (rows x cols floats).
  void read_slot(int slot, float* out, cudaStream_t stream) const;
  // Scratch layer := new - stored(slot), computed exactly in one pass (before write_slot).
  void write_scratch_difference(int slot, const float* projection, cudaStream_t stream);
  // Scratch layer := stored(slot) (the old projection, before write_slot overwrites it).
  void copy_slot_to_scratch(int slot, cudaStream_t stream);
  // Scratch layer := projection.
  void write_scratch(const float* projection, cudaStream_t stream);
  // Copies the scratch layer into device memory `out` (rows x cols floats).
  void read_scratch(float* out, cudaStream_t stream) const;

  struct LayeredArray;  // one layered CUDA array with its texture and surface objects

 private:
  void check_slot(int slot) const;
  const LayeredArray& array_of(int slot) const;

  DetectorShape shape_;
  int slots_;
  int layers_per_array_;
  bool gather_supported_ = false;
  std::vector<std::unique_ptr<LayeredArray>> arrays_;
  std::unique_ptr<LayeredArray> scratch_;
  DeviceBuffer<float> mirror_;          // slots x rows x cols, when enabled
  DeviceBuffer<float> scratch_linear_;  // rows x cols, when the mirror is enabled
};

}  // namespace slicestream::cuda
