// The window of filtered projections on the GPU.
//
// Slots live in layered CUDA arrays, each bound to its texture objects for the lifetime of the
// scan; an arriving projection overwrites its layer in place, nothing is re-created or
// re-uploaded. One array holds up to the device's layer limit (maxTexture2DLayered[2], 2048 on
// current GPUs); longer windows continue in further arrays behind the same slot -> (array, layer)
// interface. Scratch layers hold what the incremental update backprojects besides the slot itself
// (new - old, or the old projection), one per projection of a batch (replace_slots).
//
// Each array has two texture objects over the same data, hardware bilinear filtering (fast, but
// its weights have 8 fractional bits) and point sampling (exact texel values, also for gathers),
// and a surface object for in-kernel reads and writes. Optionally every slot also lives in linear
// memory, for exact fp32 interpolation through the L1 cache (BackprojectInterpolation):
//   kPlain  rows x cols floats;
//   kQuads  (rows + 1) x (cols + 1) float4, quad (r, c) = the 2x2 texels (r..r+1, c..c+1) for
//           r, c from -1, zeros outside: one 16-byte load per bilinear sample, no bounds checks.
// With a linear copy the texture layers are only needed by the texture interpolation paths:
// set_texture_layer_writes(false) skips writing them (the per-projection update then moves
// ~1/3 fewer bytes with the plain copy) and set_texture_layer_writes(true) brings them up to date
// from the linear copy again before a texture path reads them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/frame_view.hpp"

namespace slicestream::cuda {

enum class LinearCopy { kNone, kPlain, kQuads };
const char* to_string(LinearCopy copy);

struct ProjectionStoreOptions {
  int max_layers_per_array = 0;  // 0: the device's limit; tests lower it to exercise several arrays
  LinearCopy linear_copy = LinearCopy::kNone;
  bool texture_gather = true;  // ask for gather support (falls back when the driver refuses)
  int scratch_layers = 1;      // the largest batch replace_slots takes
};

// Where one stored projection (or the scratch layer) can be read from.
struct TextureRef {
  cudaTextureObject_t filtered = 0;  // bilinear filtering in hardware
  cudaTextureObject_t point = 0;     // point sampling and gather
  int layer = 0;
  const float* linear = nullptr;  // kPlain copy
  const float4* quads = nullptr;  // kQuads copy
};

// What a slot replacement (replace_slots) leaves in its scratch layer.
enum class ScratchContent { kUnchanged, kDifference, kOldProjection };

// One projection of a batched replacement: entry i of a batch leaves its scratch content in
// scratch layer i.
struct SlotReplacement {
  int slot = 0;
  const float* projection = nullptr;  // device, rows x cols floats
  ScratchContent scratch = ScratchContent::kUnchanged;
};

class LaunchSequence;

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
  LinearCopy linear_copy() const { return linear_copy_; }
  int scratch_layers() const { return scratch_layers_; }

  TextureRef slot_ref(int slot) const;
  TextureRef scratch_ref(int index = 0) const;

  // Texture layers written by every update (the default), or skipped (needs a linear copy; throws
  // CudaError without one). Turning writes back on first copies every slot's linear copy into its
  // layer on `stream`, so that texture fetches enqueued afterwards read current data.
  void set_texture_layer_writes(bool enabled, cudaStream_t stream);
  bool texture_layer_writes() const { return layer_writes_; }
  // False while skipped writes left some layer behind its slot's linear copy.
  bool texture_layers_current() const { return layers_current_; }

  // Overwrites `slot` with `projection` (device, rows x cols floats, row-major): the layer with
  // cudaMemcpy3DAsync, the linear copy alike. For filling a store; arriving projections take
  // replace_slots.
  void write_slot(int slot, const float* projection, cudaStream_t stream);
  // The per-projection update of a batch of distinct slots (at most scratch_layers() entries) in
  // one pass over the data and one launch per pass: for entry i, reads the old content of its
  // slot where `scratch` asks for it, leaves new - old or old in scratch layer i, and writes the
  // projection into the slot in place (layer through its surface unless layer writes are off,
  // and the linear copy). Throws CudaError for a repeated slot or too large a batch.
  void replace_slots(const std::vector<SlotReplacement>& batch, cudaStream_t stream);
  // What replace_slots enqueues, appended to `sequence` (graph replay).
  void append_replace_slots(const std::vector<SlotReplacement>& batch, LaunchSequence& sequence);

  // Copies `slot` / scratch layer `index` (the texture layer) into device memory `out`.
  void read_slot(int slot, float* out, cudaStream_t stream) const;
  void read_scratch(float* out, cudaStream_t stream, int index = 0) const;

  struct LayeredArray;  // one layered CUDA array with its texture and surface objects

 private:
  void check_slot(int slot) const;
  const LayeredArray& array_of(int slot) const;
  std::size_t quad_count() const;
  // Copies every slot's linear copy into its texture layer (one launch per array).
  void sync_layers_from_linear(cudaStream_t stream);

  DetectorShape shape_;
  int slots_;
  int layers_per_array_;
  int scratch_layers_;
  LinearCopy linear_copy_;
  bool gather_supported_ = false;
  bool layer_writes_ = true;
  bool layers_current_ = true;
  std::vector<std::unique_ptr<LayeredArray>> arrays_;
  std::unique_ptr<LayeredArray> scratch_;  // scratch_layers layers
  DeviceBuffer<float> plain_;              // slots x rows x cols (kPlain)
  DeviceBuffer<float> scratch_plain_;      // scratch_layers x rows x cols (kPlain)
  DeviceBuffer<float4> quads_;             // slots x quad_count() (kQuads)
  DeviceBuffer<float4> scratch_quads_;     // scratch_layers x quad_count() (kQuads)
};

}  // namespace slicestream::cuda
