// The window of filtered projections on the GPU: ONE copy of each projection, in the form the
// backprojection reads.
//
// With texture storage (the default) slots live in layered CUDA arrays, each bound to its
// hardware-filtered texture object for the lifetime of the scan; an arriving projection
// overwrites its layer in place through the array's surface object, nothing is re-created or
// re-uploaded. One array holds up to the device's layer limit (maxTexture2DLayered[2], 2048 on
// current GPUs); longer windows continue in further arrays behind the same slot -> (array, layer)
// interface. Texels are fp32 or fp16 (half the bytes to read; the texture unit converts to fp32
// before it filters), or mirrored pairs of fp16 texels: texel (col, r) holds rows r and
// rows - 1 - r of the projection, in layers of (rows + 3) / 2 texel rows, so each projection is
// still stored once (with a row or two twice). In a scan whose source and detector centre lie in
// the plane of the detector's centre row, a point and its mirror image in that plane project onto
// mirrored rows of the same column for every source, so one fetch filters both (Backprojector
// pairs the rows of such targets); any other point folds its row into the upper half and takes
// the texel's other channel. With linear storage (the exact path) slots are plain fp32 rows in
// linear memory, read through L1 with fp32 interpolation weights.
//
// Beside each texture layer (slot or scratch) the store keeps its centre line: the values along the
// detector's centre row (rows - 1) / 2 as fp32 (the mean of the two middle rows for an even
// height), each with its right neighbour, so that one 8-byte load and one FMA interpolate it. In a
// circular scan whose source and detector centre lie in one plane, every point of that plane
// projects onto the centre line, whatever the source: the axial slice through that plane (cone or
// parallel beam) is sampled from the lines by the backprojector, in fp32 on the SM's FMA pipe
// instead of through the texture unit. The lines hold the values as the layers store them
// (fp16-rounded with fp16 texels), cols + 3 entries per layer, a few KB; a scratch layer's line
// holds the lines' new - old (exact in fp32) or old.
//
// Scratch layers hold what the incremental update backprojects besides the slot itself (new - old,
// or the old projection), one per projection of a batch (replace_slots), in the slots' texels: the
// backprojection of the differences reads half the bytes with fp16 texels, as a recompute does.
// new - old is the difference of the stored values: exact with fp32 texels or rows; with fp16
// texels exact in fp32 and rounded once more into its fp16 texel (2^-11 of the difference), so
// live slices drift from a recompute of the store by rounding errors of their updates, which the
// reconstructor's periodic refresh bounds as it bounds fp32's.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/frame_view.hpp"

namespace slicestream::cuda {

enum class ProjectionStorage {
  kTexture,      // layered texture, fp32 texels, hardware bilinear filtering
  kTextureHalf,  // layered texture, fp16 texels, hardware bilinear filtering
  // layered texture, fp16 texel pairs of mirrored rows (row r and rows - 1 - r), half the height
  kTextureHalfMirrored,
  kLinear,  // plain fp32 rows in linear memory (exact fp32 interpolation)
};
const char* to_string(ProjectionStorage storage);
bool is_texture(ProjectionStorage storage);
// Texel rows of a layer of mirrored pairs: rows r <= (rows + 1) / 2, so that a bilinear fetch at
// any row of the upper half (up to the centre) finds both of its texel rows.
inline int mirrored_texel_rows(int rows) {
  return (rows + 3) / 2;
}
// Entries of a centre line: entry e holds (v[e - 2], v[e - 1]) for e in [0, cols + 2], values
// outside the detector zero, so that a sample at column x in [-2, cols] reads entry floor(x) + 2.
inline int centre_line_entries(int cols) {
  return cols + 3;
}

struct ProjectionStoreOptions {
  int max_layers_per_array = 0;  // 0: the device's limit; tests lower it to exercise several arrays
  ProjectionStorage storage = ProjectionStorage::kTexture;
  int scratch_layers = 1;  // the largest batch replace_slots takes
};

// Where one stored projection (or a scratch layer) is read from: a filtered texture object and
// its layer (texture storage), or the first of its rows x cols floats (linear storage).
struct TextureRef {
  cudaTextureObject_t texture = 0;
  int layer = 0;
  const float* linear = nullptr;
  bool mirrored = false;  // the texture's texels are mirrored fp16 pairs
  // Texture storage: the layer's centre line (centre_line_entries(cols) entries).
  const float2* centre_line = nullptr;
};

// What a slot replacement (replace_slots) leaves in its scratch layer.
enum class ScratchContent { kUnchanged, kDifference, kOldProjection };

// One projection of a batched replacement: entry i of a batch leaves its scratch content in
// scratch layer first_scratch + i (replace_slots). The projection's rows may lie further apart than
// cols (row_pitch floats, 0: cols): the ramp filter's padded output (FilteredRows::kPadded) is
// cropped by the replacement itself as it reads each row, so no pass of its own copies the filtered
// projection.
struct SlotReplacement {
  int slot = 0;
  const float* projection = nullptr;  // device, rows rows of row_pitch floats (cols read)
  ScratchContent scratch = ScratchContent::kUnchanged;
  int row_pitch = 0;
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
  ProjectionStorage storage() const { return storage_; }
  int layers_per_array() const { return layers_per_array_; }
  int array_count() const { return static_cast<int>(arrays_.size()); }
  int scratch_layers() const { return scratch_layers_; }

  TextureRef slot_ref(int slot) const;
  TextureRef scratch_ref(int index = 0) const;

  // Overwrites `slot` with `projection` (device, rows x cols floats, row-major) on `stream`; for
  // filling a store (arriving projections take replace_slots).
  void write_slot(int slot, const float* projection, cudaStream_t stream);
  // The per-projection update of a batch of distinct slots in one pass over the data: for entry
  // i, reads the old content of its slot where `scratch` asks for it, leaves new - old or old in
  // scratch layer first_scratch + i, and writes the projection into the slot in place (cropping
  // rows that lie row_pitch apart). A batch whose scratch layers are not those the previous
  // batch's backprojection reads may run beside it (on another stream). Throws CudaError for a
  // repeated slot, a row pitch below cols or scratch layers past scratch_layers().
  // cpu::replace_slot (tests/support/) is its CPU twin.
  void replace_slots(const std::vector<SlotReplacement>& batch, cudaStream_t stream,
                     int first_scratch = 0);
  // What replace_slots enqueues, appended to `sequence` (graph replay).
  void append_replace_slots(const std::vector<SlotReplacement>& batch, LaunchSequence& sequence,
                            int first_scratch = 0);

  // Values replace_slots clamped to fp16's finite range (+-65504; NaN to zero) since the store
  // was made, new values and differences new - old alike: always 0 with fp32 texels or rows.
  // Written by the GPU as the passes run, so a read sees the passes that have finished.
  std::uint64_t values_clamped() const;

  // Copies `slot` / scratch layer `index` as fp32 into device memory `out` (rows x cols). A
  // slot's centre line is read through slot_ref(slot).centre_line.
  void read_slot(int slot, float* out, cudaStream_t stream) const;
  void read_scratch(float* out, cudaStream_t stream, int index = 0) const;

  struct LayeredArray;  // one layered CUDA array with its texture and surface objects

 private:
  void check_slot(int slot) const;
  const LayeredArray& array_of(int slot) const;
  // The centre line of layer `layer`: slots 0 .. slots - 1, then the scratch layers.
  const float2* centre_line(int layer) const;
  void check_scratch(int index) const;
  bool half_texels() const {
    return storage_ == ProjectionStorage::kTextureHalf ||
           storage_ == ProjectionStorage::kTextureHalfMirrored;
  }
  bool mirrored() const { return storage_ == ProjectionStorage::kTextureHalfMirrored; }
  // One stored projection as fp32 into `out`: a copy of linear storage, or its layer of the
  // array behind `surface`.
  void copy_out(const TextureRef& ref, cudaSurfaceObject_t surface, float* out,
                cudaStream_t stream) const;

  DetectorShape shape_;
  int slots_;
  int layers_per_array_ = 0;
  int scratch_layers_;
  ProjectionStorage storage_;
  std::vector<std::unique_ptr<LayeredArray>> arrays_;  // texture storage
  std::unique_ptr<LayeredArray> scratch_;              // texture storage: scratch layers
  DeviceBuffer<float2> centre_lines_;   // texture storage: slots, then scratch layers
  DeviceBuffer<float> linear_;          // linear storage: slots x rows x cols
  DeviceBuffer<float> scratch_linear_;  // linear storage: scratch x rows x cols
  // fp16 texels: the count of clamped values in page-locked host memory the passes add to (only
  // when a value is out of range, so it costs nothing otherwise), and its device address.
  PinnedBuffer<unsigned long long> clamped_;
  unsigned long long* clamped_on_device_ = nullptr;
};

}  // namespace slicestream::cuda
