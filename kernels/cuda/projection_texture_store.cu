#include "kernels/cuda/projection_texture_store.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.hpp"

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
  if (want_gather) {
    if (cudaMalloc3DArray(&result->array, &format, extent, base_flags | cudaArrayTextureGather) ==
        cudaSuccess) {
      *gather = true;
    } else {
      (void)cudaGetLastError();  // not sticky: clear it and try without gather
      result->array = nullptr;
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

// diff = projection - stored(layer): exact texel reads through the surface, one pass; writes the
// scratch array (surface) and, when given, its linear mirror.
__global__ void store_difference_kernel(const float* __restrict__ projection,
                                        cudaSurfaceObject_t stored, int layer,
                                        cudaSurfaceObject_t scratch, float* __restrict__ linear,
                                        int rows, int cols) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (col >= cols || row >= rows) return;
  const std::size_t index = static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) +
                            static_cast<std::size_t>(col);
  float old_value = 0.0f;
  surf2DLayeredread(&old_value, stored, col * static_cast<int>(sizeof(float)), row, layer);
  const float diff = projection[index] - old_value;
  surf2DLayeredwrite(diff, scratch, col * static_cast<int>(sizeof(float)), row, 0);
  if (linear != nullptr) linear[index] = diff;
}

}  // namespace

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
  const std::size_t layer_bytes = shape.pixels() * sizeof(float);
  const std::size_t layers = static_cast<std::size_t>(slots) + 1;  // + scratch
  return layer_bytes * layers * (options.linear_mirror ? 2 : 1);
}

ProjectionTextureStore::ProjectionTextureStore(int device, DetectorShape shape, int slots,
                                               const ProjectionStoreOptions& options)
    : shape_(shape), slots_(slots) {
  if (slots <= 0) throw std::invalid_argument("projection store needs at least one slot");
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
  scratch_ = make_layered_array(shape, 1, gather, &scratch_gather);
  gather_supported_ = gather && scratch_gather;
  if (options.linear_mirror) {
    mirror_ = DeviceBuffer<float>(shape.pixels() * static_cast<std::size_t>(slots));
    scratch_linear_ = DeviceBuffer<float>(shape.pixels());
  }
}

ProjectionTextureStore::~ProjectionTextureStore() = default;

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
  if (!mirror_.empty())
    ref.linear = mirror_.data() + shape_.pixels() * static_cast<std::size_t>(slot);
  return ref;
}

TextureRef ProjectionTextureStore::scratch_ref() const {
  TextureRef ref;
  ref.filtered = scratch_->filtered;
  ref.point = scratch_->point;
  ref.layer = 0;
  if (!scratch_linear_.empty()) ref.linear = scratch_linear_.data();
  return ref;
}

void ProjectionTextureStore::write_slot(int slot, const float* projection, cudaStream_t stream) {
  const LayeredArray& a = array_of(slot);
  const cudaMemcpy3DParms p =
      linear_to_layer(projection, shape_, a.array, slot % layers_per_array_);
  SLICESTREAM_CUDA_CHECK(cudaMemcpy3DAsync(&p, stream));
  if (!mirror_.empty()) {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(
        mirror_.data() + shape_.pixels() * static_cast<std::size_t>(slot), projection,
        shape_.pixels() * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  }
}

void ProjectionTextureStore::write_scratch(const float* projection, cudaStream_t stream) {
  const cudaMemcpy3DParms p = linear_to_layer(projection, shape_, scratch_->array, 0);
  SLICESTREAM_CUDA_CHECK(cudaMemcpy3DAsync(&p, stream));
  if (!scratch_linear_.empty()) {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(scratch_linear_.data(), projection,
                                           shape_.pixels() * sizeof(float),
                                           cudaMemcpyDeviceToDevice, stream));
  }
}

namespace {

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

void ProjectionTextureStore::read_slot(int slot, float* out, cudaStream_t stream) const {
  layer_to_linear(array_of(slot).array, slot % layers_per_array_, shape_, out, stream);
}

void ProjectionTextureStore::read_scratch(float* out, cudaStream_t stream) const {
  layer_to_linear(scratch_->array, 0, shape_, out, stream);
}

void ProjectionTextureStore::copy_slot_to_scratch(int slot, cudaStream_t stream) {
  const LayeredArray& a = array_of(slot);
  cudaMemcpy3DParms p{};
  p.srcArray = a.array;
  p.srcPos = make_cudaPos(0, 0, static_cast<std::size_t>(slot % layers_per_array_));
  p.dstArray = scratch_->array;
  p.dstPos = make_cudaPos(0, 0, 0);
  p.extent = make_cudaExtent(static_cast<std::size_t>(shape_.cols),
                             static_cast<std::size_t>(shape_.rows), 1);
  p.kind = cudaMemcpyDeviceToDevice;
  SLICESTREAM_CUDA_CHECK(cudaMemcpy3DAsync(&p, stream));
  if (!mirror_.empty()) {
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(
        scratch_linear_.data(), mirror_.data() + shape_.pixels() * static_cast<std::size_t>(slot),
        shape_.pixels() * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  }
}

void ProjectionTextureStore::write_scratch_difference(int slot, const float* projection,
                                                      cudaStream_t stream) {
  const LayeredArray& a = array_of(slot);
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((shape_.cols + 31) / 32),
                  static_cast<unsigned>((shape_.rows + 7) / 8));
  store_difference_kernel<<<grid, block, 0, stream>>>(
      projection, a.surface, slot % layers_per_array_, scratch_->surface,
      scratch_linear_.empty() ? nullptr : scratch_linear_.data(), shape_.rows, shape_.cols);
  SLICESTREAM_CUDA_CHECK_LAUNCH("store_difference_kernel");
}

}  // namespace slicestream::cuda
