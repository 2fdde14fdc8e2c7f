#include "kernels/cuda/projection_texture_store.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/cuda/projection_store_kernels.cuh"

namespace slicestream::cuda {

// One layered CUDA array with its filtered texture object and its surface object.
struct ProjectionTextureStore::LayeredArray {
  cudaArray_t array = nullptr;
  cudaTextureObject_t texture = 0;
  cudaSurfaceObject_t surface = 0;
  int layers = 0;

  ~LayeredArray() {
    if (surface != 0) cudaDestroySurfaceObject(surface);
    if (texture != 0) cudaDestroyTextureObject(texture);
    if (array != nullptr) cudaFreeArray(array);
  }
};

namespace {

// Hardware bilinear filtering, zero outside the detector, texel centres at (i + 0.5, j + 0.5).
cudaTextureObject_t make_filtered_texture(cudaArray_t array) {
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture{};
  for (auto& mode : texture.addressMode)
    mode = cudaAddressModeBorder;
  texture.filterMode = cudaFilterModeLinear;
  texture.readMode = cudaReadModeElementType;
  texture.normalizedCoords = 0;
  cudaTextureObject_t object = 0;
  SLICESTREAM_CUDA_CHECK(cudaCreateTextureObject(&object, &resource, &texture, nullptr));
  return object;
}

// Texel rows of one layer of `storage` for a detector of `rows` rows.
int texel_rows_of(ProjectionStorage storage, int rows) {
  return storage == ProjectionStorage::kTextureHalfMirrored ? mirrored_texel_rows(rows) : rows;
}

// Bytes of one texel (or linear value) of `storage`.
std::size_t texel_bytes_of(ProjectionStorage storage) {
  return storage == ProjectionStorage::kTextureHalf ? sizeof(std::uint16_t) : sizeof(float);
}

// The layers' texels for each storage: fp32, fp16, or a pair of fp16 values.
cudaChannelFormatDesc texel_format(ProjectionStorage storage) {
  switch (storage) {
    case ProjectionStorage::kTextureHalf:
      return cudaCreateChannelDescHalf();
    case ProjectionStorage::kTextureHalfMirrored:
      return cudaCreateChannelDescHalf2();
    default:
      return cudaCreateChannelDesc<float>();
  }
}

// `layers` layers of texels of `storage` for a detector of `shape` (zeroed by the constructor).
std::unique_ptr<ProjectionTextureStore::LayeredArray> make_layered_array(
    DetectorShape shape, int layers, ProjectionStorage storage) {
  auto result = std::make_unique<ProjectionTextureStore::LayeredArray>();
  const cudaChannelFormatDesc format = texel_format(storage);
  const cudaExtent extent =
      make_cudaExtent(static_cast<std::size_t>(shape.cols),
                      static_cast<std::size_t>(texel_rows_of(storage, shape.rows)),
                      static_cast<std::size_t>(layers));
  SLICESTREAM_CUDA_CHECK(cudaMalloc3DArray(&result->array, &format, extent,
                                           cudaArrayLayered | cudaArraySurfaceLoadStore));
  result->layers = layers;
  result->texture = make_filtered_texture(result->array);
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = result->array;
  SLICESTREAM_CUDA_CHECK(cudaCreateSurfaceObject(&result->surface, &resource));
  return result;
}

// A grid over rows x cols pixels, `depth` deep, of blocks of `block` threads that take
// `per_thread` neighbouring columns each.
dim3 pixel_grid(DetectorShape shape, std::size_t depth, dim3 block, int per_thread = 1) {
  const int block_cols = static_cast<int>(block.x) * per_thread;
  return dim3(static_cast<unsigned>((shape.cols + block_cols - 1) / block_cols),
              static_cast<unsigned>((shape.rows + static_cast<int>(block.y) - 1) /
                                    static_cast<int>(block.y)),
              static_cast<unsigned>(depth));
}

// Whether a replacement batch takes kQuad neighbouring values per thread
// (replace_slots_quad_kernel, replace_slots_mirrored_quad_kernel): fp32 rows, fp16 texels or
// mirrored fp16 pairs, rows of whole quads in the slots (cols)
// and in each projection (its row pitch), projections aligned to a quad's 16 bytes (pooled
// buffers and cudaMalloc's are; a view into one may not be).
bool takes_quads(ProjectionStorage storage, const ReplaceBatch& batch, std::size_t count) {
  if (storage == ProjectionStorage::kTexture || batch.cols % kQuad != 0) return false;
  for (std::size_t k = 0; k < count; ++k) {
    const ReplaceEntry& e = batch.entries[k];
    if (e.row_pitch % kQuad != 0 ||
        reinterpret_cast<std::uintptr_t>(e.projection) % (kQuad * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

const char* to_string(ProjectionStorage storage) {
  switch (storage) {
    case ProjectionStorage::kTexture:
      return "texture fp32";
    case ProjectionStorage::kTextureHalf:
      return "texture fp16";
    case ProjectionStorage::kTextureHalfMirrored:
      return "texture fp16 mirrored";
    case ProjectionStorage::kLinear:
      return "linear fp32";
  }
  return "unknown";
}

bool is_texture(ProjectionStorage storage) {
  return storage != ProjectionStorage::kLinear;
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
  const std::size_t layer_bytes =
      static_cast<std::size_t>(shape.cols) *
      static_cast<std::size_t>(texel_rows_of(options.storage, shape.rows)) *
      texel_bytes_of(options.storage);
  const std::size_t layers = static_cast<std::size_t>(std::max(slots, 0)) +
                             static_cast<std::size_t>(std::max(1, options.scratch_layers));
  const std::size_t line_bytes =
      is_texture(options.storage)
          ? static_cast<std::size_t>(centre_line_entries(shape.cols)) * sizeof(float2)
          : 0;
  return (layer_bytes + line_bytes) * layers;
}

ProjectionTextureStore::ProjectionTextureStore(int device, DetectorShape shape, int slots,
                                               const ProjectionStoreOptions& options)
    : shape_(shape),
      slots_(slots),
      scratch_layers_(options.scratch_layers),
      storage_(options.storage) {
  if (slots <= 0) throw std::invalid_argument("projection store needs at least one slot");
  if (scratch_layers_ <= 0) throw std::invalid_argument("projection store needs a scratch layer");
  const std::string reason = unsupported_reason(device, shape);
  if (!reason.empty()) throw CudaError(reason);
  const std::size_t count = static_cast<std::size_t>(slots);
  const std::size_t scratch_count = static_cast<std::size_t>(scratch_layers_);
  if (storage_ == ProjectionStorage::kLinear) {
    // Zeroed: empty slots read as zero projections.
    linear_ = DeviceBuffer<float>(shape.pixels() * count);
    scratch_linear_ = DeviceBuffer<float>(shape.pixels() * scratch_count);
    SLICESTREAM_CUDA_CHECK(cudaMemset(linear_.data(), 0, linear_.bytes()));
    SLICESTREAM_CUDA_CHECK(cudaMemset(scratch_linear_.data(), 0, scratch_linear_.bytes()));
    SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
    return;
  }
  const int limit = device_layer_limit(device);
  layers_per_array_ =
      options.max_layers_per_array > 0 ? std::min(options.max_layers_per_array, limit) : limit;
  for (int first = 0; first < slots; first += layers_per_array_) {
    arrays_.push_back(
        make_layered_array(shape, std::min(layers_per_array_, slots - first), storage_));
  }
  scratch_ = make_layered_array(shape, scratch_layers_, storage_);
  // Zeroed: empty slots' lines read as zeros, and the entries' outer halves stay zero.
  centre_lines_ = DeviceBuffer<float2>((count + scratch_count) *
                                       static_cast<std::size_t>(centre_line_entries(shape.cols)));
  SLICESTREAM_CUDA_CHECK(cudaMemset(centre_lines_.data(), 0, centre_lines_.bytes()));
  if (half_texels()) {
    clamped_ = PinnedBuffer<unsigned long long>(1);
    clamped_[0] = 0;
    void* device_address = nullptr;
    SLICESTREAM_CUDA_CHECK(cudaHostGetDevicePointer(&device_address, clamped_.data(), 0));
    clamped_on_device_ = static_cast<unsigned long long*>(device_address);
  }
  // Zeroed: empty slots read as zero projections.
  const dim3 block(32, 8);
  const DetectorShape texels{texel_rows_of(storage_, shape.rows), shape.cols};
  for (std::size_t a = 0; a <= arrays_.size(); ++a) {
    const LayeredArray& array = a < arrays_.size() ? *arrays_[a] : *scratch_;
    KernelLaunch(
        &clear_layers_kernel, pixel_grid(texels, static_cast<std::size_t>(array.layers), block),
        block, array.surface, static_cast<int>(texel_bytes_of(storage_)), texels.rows, texels.cols)
        .enqueue(nullptr);
  }
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
}

ProjectionTextureStore::~ProjectionTextureStore() = default;

void ProjectionTextureStore::check_slot(int slot) const {
  if (slot < 0 || slot >= slots_) {
    throw CudaError("projection store slot " + std::to_string(slot) + " out of range [0, " +
                    std::to_string(slots_) + ")");
  }
}

void ProjectionTextureStore::check_scratch(int index) const {
  if (index < 0 || index >= scratch_layers_) {
    throw CudaError("projection store scratch layer " + std::to_string(index) +
                    " out of range [0, " + std::to_string(scratch_layers_) + ")");
  }
}

const float2* ProjectionTextureStore::centre_line(int layer) const {
  return centre_lines_.data() + static_cast<std::size_t>(layer) *
                                    static_cast<std::size_t>(centre_line_entries(shape_.cols));
}

const ProjectionTextureStore::LayeredArray& ProjectionTextureStore::array_of(int slot) const {
  check_slot(slot);
  return *arrays_[static_cast<std::size_t>(slot / layers_per_array_)];
}

TextureRef ProjectionTextureStore::slot_ref(int slot) const {
  check_slot(slot);
  TextureRef ref;
  if (!is_texture(storage_)) {
    ref.linear = linear_.data() + shape_.pixels() * static_cast<std::size_t>(slot);
    return ref;
  }
  ref.texture = array_of(slot).texture;
  ref.layer = slot % layers_per_array_;
  ref.mirrored = mirrored();
  ref.centre_line = centre_line(slot);
  return ref;
}

TextureRef ProjectionTextureStore::scratch_ref(int index) const {
  check_scratch(index);
  TextureRef ref;
  ref.layer = index;
  if (!is_texture(storage_)) {
    ref.linear = scratch_linear_.data() + shape_.pixels() * static_cast<std::size_t>(index);
    return ref;
  }
  ref.texture = scratch_->texture;
  ref.mirrored = mirrored();
  ref.centre_line = centre_line(slots_ + index);
  return ref;
}

void ProjectionTextureStore::write_slot(int slot, const float* projection, cudaStream_t stream) {
  replace_slots({{slot, projection, ScratchContent::kUnchanged}}, stream);
}

void ProjectionTextureStore::replace_slots(const std::vector<SlotReplacement>& batch,
                                           cudaStream_t stream, int first_scratch) {
  LaunchSequence sequence;
  append_replace_slots(batch, sequence, first_scratch);
  sequence.enqueue(stream);
}

void ProjectionTextureStore::append_replace_slots(const std::vector<SlotReplacement>& batch,
                                                  LaunchSequence& sequence, int first_scratch) {
  if (batch.empty()) return;
  if (first_scratch < 0 ||
      batch.size() >
          static_cast<std::size_t>(scratch_layers_ - std::min(first_scratch, scratch_layers_))) {
    throw CudaError("projection store: a batch of " + std::to_string(batch.size()) +
                    " replacements from scratch layer " + std::to_string(first_scratch) + " of " +
                    std::to_string(scratch_layers_));
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    check_slot(batch[i].slot);
    if (batch[i].projection == nullptr) throw CudaError("projection store: no projection");
    if (batch[i].row_pitch != 0 && batch[i].row_pitch < shape_.cols) {
      throw CudaError("projection store: rows " + std::to_string(batch[i].row_pitch) +
                      " floats apart for " + std::to_string(shape_.cols) + " columns");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (batch[j].slot == batch[i].slot) {
        throw CudaError("projection store: slot " + std::to_string(batch[i].slot) +
                        " twice in one batch");
      }
    }
  }
  const dim3 block(32, 8);
  for (std::size_t first = 0; first < batch.size(); first += kMaxReplaceBatch) {
    const std::size_t count =
        std::min(batch.size() - first, static_cast<std::size_t>(kMaxReplaceBatch));
    ReplaceBatch params{};
    params.rows = shape_.rows;
    params.cols = shape_.cols;
    params.half_texels = half_texels() ? 1 : 0;
    params.texel_rows = texel_rows_of(storage_, shape_.rows);
    params.out_of_range = clamped_on_device_;
    for (std::size_t k = 0; k < count; ++k) {
      const SlotReplacement& r = batch[first + k];
      const int scratch_index = first_scratch + static_cast<int>(first + k);
      const TextureRef slot = slot_ref(r.slot);
      const TextureRef scratch = scratch_ref(scratch_index);
      ReplaceEntry& e = params.entries[k];
      e.projection = r.projection;
      e.row_pitch = r.row_pitch != 0 ? r.row_pitch : shape_.cols;
      e.slot = {is_texture(storage_) ? array_of(r.slot).surface : 0,
                const_cast<float*>(slot.linear), slot.layer};
      e.scratch = {is_texture(storage_) ? scratch_->surface : 0, const_cast<float*>(scratch.linear),
                   scratch_index};
      e.scratch_mode = scratch_mode_of(r.scratch);
      e.slot_line = const_cast<float2*>(slot.centre_line);
      e.scratch_line = const_cast<float2*>(scratch.centre_line);
    }
    const bool quads = takes_quads(storage_, params, count);
    if (mirrored()) {
      // One thread per texel (pair of pixels) of the layer's texel rows. The quads' blocks are
      // 16 x 16 threads: with wider, flatter blocks the L2 writes the surface stores' half-filled
      // sectors one by one, and the pass runs at well below the copy rate (docs/performance.md).
      const DetectorShape texels{params.texel_rows, shape_.cols};
      const dim3 quad_block(16, 16);
      sequence.add(quads ? KernelLaunch(&replace_slots_mirrored_quad_kernel,
                                        pixel_grid(texels, count, quad_block, kQuad), quad_block,
                                        params)
                         : KernelLaunch(&replace_slots_mirrored_kernel,
                                        pixel_grid(texels, count, block), block, params));
    } else if (quads) {
      sequence.add(KernelLaunch(&replace_slots_quad_kernel, pixel_grid(shape_, count, block, kQuad),
                                block, params));
    } else {
      sequence.add(
          KernelLaunch(&replace_slots_kernel, pixel_grid(shape_, count, block), block, params));
    }
    if (is_texture(storage_) && !mirrored()) {  // the mirrored passes keep the lines themselves
      const dim3 line_block(128);
      const dim3 line_grid(static_cast<unsigned>((shape_.cols + 127) / 128),
                           static_cast<unsigned>(count));
      sequence.add(KernelLaunch(&replace_centre_lines_kernel, line_grid, line_block, params));
    }
  }
}

std::uint64_t ProjectionTextureStore::values_clamped() const {
  if (clamped_.size() == 0) return 0;
  // The GPU adds to it behind the compiler's back: read memory, not a register's copy.
  return *static_cast<const volatile unsigned long long*>(clamped_.data());
}

void ProjectionTextureStore::read_slot(int slot, float* out, cudaStream_t stream) const {
  const TextureRef ref = slot_ref(slot);
  const cudaSurfaceObject_t surface = is_texture(storage_) ? array_of(slot).surface : 0;
  copy_out(ref, surface, out, stream);
}

void ProjectionTextureStore::read_scratch(float* out, cudaStream_t stream, int index) const {
  const TextureRef ref = scratch_ref(index);
  copy_out(ref, is_texture(storage_) ? scratch_->surface : 0, out, stream);
}

void ProjectionTextureStore::copy_out(const TextureRef& ref, cudaSurfaceObject_t surface,
                                      float* out, cudaStream_t stream) const {
  if (ref.linear != nullptr) {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(out, ref.linear, shape_.pixels() * sizeof(float),
                                           cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const dim3 block(32, 8);
  KernelLaunch(&read_layer_kernel, pixel_grid(shape_, 1, block), block,
               SlotAccess{surface, nullptr, ref.layer}, half_texels() ? 1 : 0, mirrored() ? 1 : 0,
               shape_.rows, shape_.cols, out)
      .enqueue(stream);
}

}  // namespace slicestream::cuda
