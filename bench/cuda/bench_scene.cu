#include "bench_scene.hpp"

#include <string>

#include "kernels/cuda/cuda_check.hpp"

namespace slicestream::bench {
namespace {

constexpr double kPi = 3.14159265358979323846;

__device__ unsigned hash(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// A few random plane waves plus 5% noise: smooth like filtered projections of real objects,
// never zeros.
__global__ void smooth_random_kernel(float* out, int rows, int cols, unsigned seed) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int r = static_cast<int>(blockIdx.y);
  if (c >= cols) return;
  float value = 0.3f;
  for (unsigned w = 0; w < 4; ++w) {
    const unsigned h = hash(seed * 16u + w);
    const float kx = (static_cast<float>(h & 1023u) / 1023.0f - 0.5f) * 0.2f;
    const float ky = (static_cast<float>((h >> 10) & 1023u) / 1023.0f - 0.5f) * 0.2f;
    const float phase = static_cast<float>((h >> 20) & 1023u) / 1023.0f * 6.2831853f;
    value += 0.5f * cosf(kx * static_cast<float>(c) + ky * static_cast<float>(r) + phase);
  }
  const unsigned n = hash(seed ^ hash(static_cast<unsigned>(r * cols + c)));
  value += 0.05f * (static_cast<float>(n & 0xffffu) / 65535.0f - 0.5f);
  out[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)] =
      value;
}

}  // namespace

const std::vector<SetupSpec>& kernelkit_setups() {
  static const std::vector<SetupSpec> setups = {
      {"flexray", {400, 600}, 400, 75, 0.101, 0.203},
      {"highspeed", {1024, 1024}, 1024, 128, 0.806, 1.46},
      {"tomobank", {2016, 1800}, 2016, 300, 6.79, 12.1},
  };
  return setups;
}

void fill_smooth_random(float* out, DetectorShape shape, unsigned seed, cudaStream_t stream) {
  const dim3 block(256);
  const dim3 grid(static_cast<unsigned>((shape.cols + 255) / 256),
                  static_cast<unsigned>(shape.rows));
  smooth_random_kernel<<<grid, block, 0, stream>>>(out, shape.rows, shape.cols, seed);
  SLICESTREAM_CUDA_CHECK_LAUNCH("smooth_random_kernel");
}

ScanGeometry setup_geometry(const SetupSpec& spec, BeamKind beam) {
  // 1 mm voxels; the detector pixel seen at the rotation axis is 1 mm; a 180-degree window.
  std::vector<double> angles;
  for (int p = 0; p < spec.projections; ++p)
    angles.push_back(kPi * p / spec.projections);
  if (beam == BeamKind::kParallel) {
    CircularParallelParams params;
    params.angles_rad = angles;
    return make_parallel_geometry(spec.detector, params);
  }
  CircularConeParams params;
  params.angles_rad = angles;
  params.source_origin_mm = 3.0 * spec.slice_side;
  params.origin_detector_mm = 3.0 * spec.slice_side;
  params.pixel_width_mm = 2.0;
  params.pixel_height_mm = 2.0;
  return make_cone_geometry(spec.detector, params);
}

std::vector<GridSpec> setup_slices(const SetupSpec& spec) {
  const double half_xy = 0.5 * spec.slice_side;
  const double half_z = 0.5 * spec.detector.rows;
  const VolumeBox box{{-half_xy, -half_xy, -half_z}, {half_xy, half_xy, half_z}};
  std::vector<GridSpec> slices;
  for (const SliceOrientation& o : default_slices(box))
    slices.push_back(slice_grid(o, spec.slice_side, spec.slice_side));
  return slices;
}

std::unique_ptr<Scene> make_scene(const SetupSpec& spec, BeamKind beam) {
  auto scene = std::make_unique<Scene>();
  scene->spec = spec;
  scene->beam = beam;
  const DetectorShape d = spec.detector;
  scene->geometry = setup_geometry(spec, beam);
  scene->maps = make_projection_maps(scene->geometry);
  for (const GridSpec& slice : setup_slices(spec)) {
    scene->slices.push_back(slice);
    scene->targets.emplace_back(slice.points());
  }

  scene->sources =
      cuda::DeviceBuffer<float>(d.pixels() * static_cast<std::size_t>(spec.projections));
  // Scratch layers for two batches of up to kLargestBenchBatch projections (one replaced while the
  // other is backprojected: the pipelined refresh).
  for (cuda::ProjectionStorage storage : kBenchStorages) {
    cuda::ProjectionStoreOptions options;
    options.scratch_layers = 2 * kLargestBenchBatch;
    options.storage = storage;
    scene->stores.push_back(
        std::make_unique<cuda::ProjectionTextureStore>(0, d, spec.projections, options));
  }
  for (int p = 0; p < spec.projections; ++p) {
    fill_smooth_random(const_cast<float*>(scene->projection(p)), d, static_cast<unsigned>(p + 1),
                       nullptr);
    for (auto& store : scene->stores)
      store->write_slot(p, scene->projection(p), nullptr);
  }
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
  return scene;
}

cuda::ProjectionTextureStore& Scene::store(cuda::ProjectionStorage storage) const {
  for (const auto& s : stores) {
    if (s->storage() == storage) return *s;
  }
  throw cuda::CudaError(std::string("benchmark scene without a store of ") +
                        cuda::to_string(storage));
}

cuda::BackprojectInterpolation interpolation_of(cuda::ProjectionStorage storage) {
  return cuda::is_texture(storage) ? cuda::BackprojectInterpolation::kTexture
                                   : cuda::BackprojectInterpolation::kExact;
}

std::vector<cuda::BackprojectJob> Scene::full_recompute_jobs(
    float scale, const cuda::ProjectionTextureStore& from) {
  std::vector<cuda::BackprojectJob> jobs;
  for (std::size_t s = 0; s < slices.size(); ++s) {
    cuda::BackprojectJob job;
    job.grid = slices[s];
    job.data = targets[s].data();
    for (int p = 0; p < spec.projections; ++p) {
      job.sources.push_back({maps[static_cast<std::size_t>(p)], from.slot_ref(p), scale});
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

double Scene::samples_per_recompute() const {
  return 3.0 * static_cast<double>(spec.slice_side) * spec.slice_side * spec.projections;
}

}  // namespace slicestream::bench
