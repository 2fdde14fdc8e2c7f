#include "kernels/cuda/projection_texture_store.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/cuda/projection_store_kernels.cuh"

namespace slicestream::cuda {

// One layered CUDA array with its two texture objects and its surface object.
struct ProjectionTextureStore::LayeredArray {
  cudaArray_t array = nullptr;
  cudaTextureObject_t filtered = 0;
  cudaTextureObject_t point = 0;
  cudaSurfaceObject_t surface = 0;
  int layers = 0;

  ~LayeredArray() {
    if (surface != 0) cudaDestroySurfaceObject(surface);
    if (point != 0) cudaDestroyTextureObject(point);
    if (filtered != 0) cudaDestroyTextureObject(filtered);
    if (array != nullptr) cudaFreeArray(array);
  }
};

namespace {

cudaTextureObject_t make_texture(cudaArray_t array, cudaTextureFilterMode filter) {
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture{};
  for (auto& mode : texture.addressMode)
    mode = cudaAddressModeBorder;  // zero outside
  texture.borderColor[0] = texture.borderColor[1] = texture.borderColor[2] = 0.0f;
  texture.borderColor[3] = 0.0f;
  texture.filterMode = filter;
  texture.readMode = cudaReadModeElementType;
  texture.normalizedCoords = 0;
  cudaTextureObject_t object = 0;
  SLICESTREAM_CUDA_CHECK(cudaCreateTextureObject(&object, &resource, &texture, nullptr));
  return object;
}

// Allocates `layers` layers of rows x cols floats. With `want_gather` it first asks for texture
// gather support and, where the driver refuses that combination, allocates without it.
std::unique_ptr<ProjectionTextureStore::LayeredArray> make_layered_array(DetectorShape shape,
                                                                         int layers,
                                                                         bool want_gather,
                                                                         bool* gather) {
  auto result = std::make_unique<ProjectionTextureStore::LayeredArray>();
  const cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  const cudaExtent extent =
      make_cudaExtent(static_cast<std::size_t>(shape.cols), static_cast<std::size_t>(shape.rows),
                      static_cast<std::size_t>(layers));
  const unsigned base_flags = cudaArrayLayered | cudaArraySurfaceLoadStore;
  *gather = false;
  // Once refused, the driver is not asked again (each refusal is an API error that tools such as
  // compute-sanitizer report).
  static std::atomic<bool> gather_refused{false};
  if (want_gather && !gather_refused.load()) {
    if (cudaMalloc3DArray(&result->array, &format, extent, base_flags | cudaArrayTextureGather) ==
        cudaSuccess) {
      *gather = true;
    } else {
      (void)cudaGetLastError();  // not sticky: clear it and try without gather
      result->array = nullptr;
      gather_refused.store(true);
    }
  }
  if (result->array == nullptr) {
    SLICESTREAM_CUDA_CHECK(cudaMalloc3DArray(&result->array, &format, extent, base_flags));
  }
  result->layers = layers;
  result->filtered = make_texture(result->array, cudaFilterModeLinear);
  result->point = make_texture(result->array, cudaFilterModePoint);
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = result->array;
  SLICESTREAM_CUDA_CHECK(cudaCreateSurfaceObject(&result->surface, &resource));
  return result;
}

cudaMemcpy3DParms linear_to_layer(const float* src, DetectorShape shape, cudaArray_t array,
                                  int layer) {
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(
      const_cast<float*>(src), static_cast<std::size_t>(shape.cols) * sizeof(float),
      static_cast<std::size_t>(shape.cols), static_cast<std::size_t>(shape.rows));
  p.dstArray = array;
  p.dstPos = make_cudaPos(0, 0, static_cast<std::size_t>(layer));
  p.extent = make_cudaExtent(static_cast<std::size_t>(shape.cols),
                             static_cast<std::size_t>(shape.rows), 1);
  p.kind = cudaMemcpyDeviceToDevice;
  return p;
}

void layer_to_linear(cudaArray_t array, int layer, DetectorShape shape, float* out,
                     cudaStream_t stream) {
  cudaMemcpy3DParms p{};
  p.srcArray = array;
  p.srcPos = make_cudaPos(0, 0, static_cast<std::size_t>(layer));
  p.dstPtr = make_cudaPitchedPtr(out, static_cast<std::size_t>(shape.cols) * sizeof(float),
                                 static_cast<std::size_t>(shape.cols),
                                 static_cast<std::size_t>(shape.rows));
  p.extent = make_cudaExtent(static_cast<std::size_t>(shape.cols),
                             static_cast<std::size_t>(shape.rows), 1);
  p.kind = cudaMemcpyDeviceToDevice;
  SLICESTREAM_CUDA_CHECK(cudaMemcpy3DAsync(&p, stream));
}

}  // namespace

const char* to_string(LinearCopy copy) {
  switch (copy) {
    case LinearCopy::kNone:
      return "none";
    case LinearCopy::kPlain:
      return "plain";
    case LinearCopy::kQuads:
      return "quads";
  }
  return "unknown";
}

int ProjectionTextureStore::device_layer_limit(int device) {
  cudaDeviceProp prop{};
  SLICESTREAM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.maxTexture2DLayered[2];
}

std::string ProjectionTextureStore::unsupported_reason(int device, DetectorShape shape) {
  cudaDeviceProp prop{};
  SLICESTREAM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  if (shape.cols <= 0 || shape.rows <= 0) return "the detector shape is empty";
  if (shape.cols > prop.maxTexture2DLayered[0] || shape.rows > prop.maxTexture2DLayered[1] ||
      shape.cols > prop.maxSurface2DLayered[0] || shape.rows > prop.maxSurface2DLayered[1]) {
    return "detector " + std::to_string(shape.rows) + " x " + std::to_string(shape.cols) +
           " exceeds the layered texture limit " + std::to_string(prop.maxTexture2DLayered[1]) +
           " x " + std::to_string(prop.maxTexture2DLayered[0]) + " of " + prop.name;
  }
  return {};
}

std::size_t ProjectionTextureStore::device_bytes(DetectorShape shape, int slots,
                                                 const ProjectionStoreOptions& options) {
  const std::size_t layers = static_cast<std::size_t>(slots) +
                             static_cast<std::size_t>(std::max(1, options.scratch_layers));
  std::size_t per_layer = shape.pixels() * sizeof(float);
  if (options.linear_copy == LinearCopy::kPlain) per_layer += shape.pixels() * sizeof(float);
  if (options.linear_copy == LinearCopy::kQuads) {
    per_layer += static_cast<std::size_t>(shape.rows + 1) *
                 static_cast<std::size_t>(shape.cols + 1) * sizeof(float4);
  }
  return per_layer * layers;
}

ProjectionTextureStore::ProjectionTextureStore(int device, DetectorShape shape, int slots,
                                               const ProjectionStoreOptions& options)
    : shape_(shape),
      slots_(slots),
      scratch_layers_(options.scratch_layers),
      linear_copy_(options.linear_copy) {
  if (slots <= 0) throw std::invalid_argument("projection store needs at least one slot");
  if (scratch_layers_ <= 0) throw std::invalid_argument("projection store needs a scratch layer");
  const std::string reason = unsupported_reason(device, shape);
  if (!reason.empty()) throw CudaError(reason);
  const int limit = device_layer_limit(device);
  layers_per_array_ =
      options.max_layers_per_array > 0 ? std::min(options.max_layers_per_array, limit) : limit;
  bool gather = options.texture_gather;
  for (int first = 0; first < slots; first += layers_per_array_) {
    const int layers = std::min(layers_per_array_, slots - first);
    bool array_gather = false;
    arrays_.push_back(make_layered_array(shape, layers, gather, &array_gather));
    gather = gather && array_gather;  // all arrays must agree
  }
  bool scratch_gather = false;
  scratch_ = make_layered_array(shape, scratch_layers_, gather, &scratch_gather);
  gather_supported_ = gather && scratch_gather;
  const std::size_t count = static_cast<std::size_t>(slots);
  const std::size_t scratch_count = static_cast<std::size_t>(scratch_layers_);
  if (linear_copy_ == LinearCopy::kPlain) {
    plain_ = DeviceBuffer<float>(shape.pixels() * count);
    scratch_plain_ = DeviceBuffer<float>(shape.pixels() * scratch_count);
  } else if (linear_copy_ == LinearCopy::kQuads) {
    // Zeroed: empty slots read as zero projections, like the fresh layers.
    quads_ = DeviceBuffer<float4>(quad_count() * count);
    scratch_quads_ = DeviceBuffer<float4>(quad_count() * scratch_count);
    SLICESTREAM_CUDA_CHECK(cudaMemset(quads_.data(), 0, quads_.bytes()));
    SLICESTREAM_CUDA_CHECK(cudaMemset(scratch_quads_.data(), 0, scratch_quads_.bytes()));
    SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
  }
}

ProjectionTextureStore::~ProjectionTextureStore() = default;

std::size_t ProjectionTextureStore::quad_count() const {
  return static_cast<std::size_t>(shape_.rows + 1) * static_cast<std::size_t>(shape_.cols + 1);
}

void ProjectionTextureStore::check_slot(int slot) const {
  if (slot < 0 || slot >= slots_) {
    throw CudaError("projection store slot " + std::to_string(slot) + " out of range [0, " +
                    std::to_string(slots_) + ")");
  }
}

const ProjectionTextureStore::LayeredArray& ProjectionTextureStore::array_of(int slot) const {
  check_slot(slot);
  return *arrays_[static_cast<std::size_t>(slot / layers_per_array_)];
}

TextureRef ProjectionTextureStore::slot_ref(int slot) const {
  const LayeredArray& a = array_of(slot);
  TextureRef ref;
  ref.filtered = a.filtered;
  ref.point = a.point;
  ref.layer = slot % layers_per_array_;
  const std::size_t s = static_cast<std::size_t>(slot);
  if (!plain_.empty()) ref.linear = plain_.data() + shape_.pixels() * s;
  if (!quads_.empty()) ref.quads = quads_.data() + quad_count() * s;
  return ref;
}

TextureRef ProjectionTextureStore::scratch_ref(int index) const {
  if (index < 0 || index >= scratch_layers_) {
    throw CudaError("projection store scratch layer " + std::to_string(index) +
                    " out of range [0, " + std::to_string(scratch_layers_) + ")");
  }
  const std::size_t i = static_cast<std::size_t>(index);
  TextureRef ref;
  ref.filtered = scratch_->filtered;
  ref.point = scratch_->point;
  ref.layer = index;
  if (!scratch_plain_.empty()) ref.linear = scratch_plain_.data() + shape_.pixels() * i;
  if (!scratch_quads_.empty()) ref.quads = scratch_quads_.data() + quad_count() * i;
  return ref;
}

void ProjectionTextureStore::write_slot(int slot, const float* projection, cudaStream_t stream) {
  const LayeredArray& a = array_of(slot);
  if (layer_writes_) {
    const cudaMemcpy3DParms p =
        linear_to_layer(projection, shape_, a.array, slot % layers_per_array_);
    SLICESTREAM_CUDA_CHECK(cudaMemcpy3DAsync(&p, stream));
  } else {
    layers_current_ = false;
  }
  const TextureRef ref = slot_ref(slot);
  if (ref.linear != nullptr) {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(const_cast<float*>(ref.linear), projection,
                                           shape_.pixels() * sizeof(float),
                                           cudaMemcpyDeviceToDevice, stream));
  }
  if (ref.quads != nullptr) {
    ReplaceQuadsBatch batch{};
    batch.entries[0] = {projection, const_cast<float4*>(ref.quads), nullptr, kScratchUnchanged};
    batch.rows = shape_.rows;
    batch.cols = shape_.cols;
    const dim3 block(64, 4);
    const dim3 grid(static_cast<unsigned>((shape_.cols + 1 + 63) / 64),
                    static_cast<unsigned>((shape_.rows + 1 + 3) / 4), 1);
    KernelLaunch(&replace_quads_kernel, grid, block, batch).enqueue(stream);
  }
}

void ProjectionTextureStore::replace_slots(const std::vector<SlotReplacement>& batch,
                                           cudaStream_t stream) {
  LaunchSequence sequence;
  append_replace_slots(batch, sequence);
  sequence.enqueue(stream);
}

void ProjectionTextureStore::append_replace_slots(const std::vector<SlotReplacement>& batch,
                                                  LaunchSequence& sequence) {
  if (batch.empty()) return;
  if (batch.size() > static_cast<std::size_t>(scratch_layers_)) {
    throw CudaError("projection store: a batch of " + std::to_string(batch.size()) +
                    " replacements for " + std::to_string(scratch_layers_) + " scratch layers");
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    check_slot(batch[i].slot);
    if (batch[i].projection == nullptr) throw CudaError("projection store: no projection");
    for (std::size_t j = 0; j < i; ++j) {
      if (batch[j].slot == batch[i].slot) {
        throw CudaError("projection store: slot " + std::to_string(batch[i].slot) +
                        " twice in one batch");
      }
    }
  }
  if (!layer_writes_) layers_current_ = false;
  const bool plain = linear_copy_ == LinearCopy::kPlain;
  const bool quads = linear_copy_ == LinearCopy::kQuads;
  // Without layers to write, a quad store's update is the quad pass alone.
  const bool pixel_pass = layer_writes_ || plain;
  for (std::size_t first = 0; first < batch.size(); first += kMaxReplaceBatch) {
    const std::size_t count =
        std::min(batch.size() - first, static_cast<std::size_t>(kMaxReplaceBatch));
    if (pixel_pass) {
      ReplacePixelsBatch params{};
      params.scratch_surface = scratch_->surface;
      params.rows = shape_.rows;
      params.cols = shape_.cols;
      params.write_layers = layer_writes_ ? 1 : 0;
      for (std::size_t k = 0; k < count; ++k) {
        const SlotReplacement& r = batch[first + k];
        const int scratch_index = static_cast<int>(first + k);
        const TextureRef ref = slot_ref(r.slot);
        const TextureRef scratch = scratch_ref(scratch_index);
        params.entries[k] = {r.projection,
                             const_cast<float*>(ref.linear),
                             const_cast<float*>(scratch.linear),
                             array_of(r.slot).surface,
                             ref.layer,
                             scratch_index,
                             scratch_mode_of(r.scratch)};
      }
      const dim3 block(32, 8);
      const dim3 grid(static_cast<unsigned>((shape_.cols + 31) / 32),
                      static_cast<unsigned>((shape_.rows + 7) / 8), static_cast<unsigned>(count));
      sequence.add(KernelLaunch(&replace_pixels_kernel, grid, block, params));
    }
    if (quads) {
      ReplaceQuadsBatch params{};
      params.rows = shape_.rows;
      params.cols = shape_.cols;
      for (std::size_t k = 0; k < count; ++k) {
        const SlotReplacement& r = batch[first + k];
        const TextureRef ref = slot_ref(r.slot);
        const TextureRef scratch = scratch_ref(static_cast<int>(first + k));
        params.entries[k] = {r.projection, const_cast<float4*>(ref.quads),
                             const_cast<float4*>(scratch.quads), scratch_mode_of(r.scratch)};
      }
      const dim3 block(64, 4);
      const dim3 grid(static_cast<unsigned>((shape_.cols + 1 + 63) / 64),
                      static_cast<unsigned>((shape_.rows + 1 + 3) / 4),
                      static_cast<unsigned>(count));
      sequence.add(KernelLaunch(&replace_quads_kernel, grid, block, params));
    }
  }
}

void ProjectionTextureStore::set_texture_layer_writes(bool enabled, cudaStream_t stream) {
  if (!enabled && linear_copy_ == LinearCopy::kNone) {
    throw CudaError(
        "projection store: the texture layers are its only copy; they cannot be skipped");
  }
  if (enabled && !layers_current_) sync_layers_from_linear(stream);
  layer_writes_ = enabled;
}

void ProjectionTextureStore::sync_layers_from_linear(cudaStream_t stream) {
  const float* plain = plain_.empty() ? nullptr : plain_.data();
  const float4* quads = quads_.empty() ? nullptr : quads_.data();
  if (plain == nullptr && quads == nullptr) {
    throw CudaError("projection store: no linear copy to bring the texture layers up to date from");
  }
  const dim3 block(32, 8);
  for (std::size_t a = 0; a < arrays_.size(); ++a) {
    const LayeredArray& array = *arrays_[a];
    const dim3 grid(static_cast<unsigned>((shape_.cols + 31) / 32),
                    static_cast<unsigned>((shape_.rows + 7) / 8),
                    static_cast<unsigned>(array.layers));
    const int first_slot = static_cast<int>(a) * layers_per_array_;
    KernelLaunch(&layers_from_linear_kernel, grid, block, array.surface, plain, quads, first_slot,
                 shape_.rows, shape_.cols)
        .enqueue(stream);
  }
  layers_current_ = true;
}

void ProjectionTextureStore::read_slot(int slot, float* out, cudaStream_t stream) const {
  layer_to_linear(array_of(slot).array, slot % layers_per_array_, shape_, out, stream);
}

void ProjectionTextureStore::read_scratch(float* out, cudaStream_t stream, int index) const {
  (void)scratch_ref(index);  // range check
  layer_to_linear(scratch_->array, index, shape_, out, stream);
}

}  // namespace slicestream::cuda
