// The benchmark's scenes: the three KernelKit set-ups (paper Table 1) with random smooth
// projections generated on the GPU into a projection store, and the quasi-3D slices.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/backprojector.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/projection_texture_store.hpp"
#include "kernels/geometry.hpp"
#include "kernels/grid_spec.hpp"

namespace slicestream::bench {

struct SetupSpec {
  std::string name;
  DetectorShape detector;  // rows x cols
  int slice_side;
  int projections;
  // KernelKit's published tuned cone-beam numbers on an H100: kernel only, and with the texture
  // re-filled from device memory.
  double kernelkit_kernel_ms;
  double kernelkit_update_ms;
};

const std::vector<SetupSpec>& kernelkit_setups();

// The batch of projections per incremental update the benchmark's sections measure (the server's
// default max_projection_batch).
inline constexpr int kMaxBenchBatch = 8;
// The largest batch the batched incremental refresh also measures (what a larger
// max_projection_batch would give).
inline constexpr int kLargestBenchBatch = 16;

// One set-up on the GPU: every projection in the store (and in `sources`, a device copy used to
// re-fill the store), three orthogonal slices, their device targets.
struct Scene {
  SetupSpec spec;
  BeamKind beam;
  ScanGeometry geometry;
  std::vector<ProjectionMap> maps;
  cuda::DeviceBuffer<float> sources;  // projections x rows x cols
  // The window in every storage the backend can use: fp32 texels, fp16 texels, mirrored fp16
  // pairs, fp32 rows.
  std::vector<std::unique_ptr<cuda::ProjectionTextureStore>> stores;
  std::vector<GridSpec> slices;
  std::vector<cuda::DeviceBuffer<float>> targets;

  cuda::ProjectionTextureStore& store(cuda::ProjectionStorage storage) const;
  const float* projection(int p) const {
    return sources.data() + spec.detector.pixels() * static_cast<std::size_t>(p);
  }
  // Quasi-3D full recompute: each slice := BP(all slots of `from`).
  std::vector<cuda::BackprojectJob> full_recompute_jobs(float scale,
                                                        const cuda::ProjectionTextureStore& from);
  double samples_per_recompute() const;  // 3 * slice pixels * projections
};

// The set-up's window (1 mm voxels, a 180-degree rotation) and its three orthogonal slices.
ScanGeometry setup_geometry(const SetupSpec& spec, BeamKind beam);
std::vector<GridSpec> setup_slices(const SetupSpec& spec);

std::unique_ptr<Scene> make_scene(const SetupSpec& spec, BeamKind beam);

inline constexpr cuda::ProjectionStorage kBenchStorages[] = {
    cuda::ProjectionStorage::kTexture, cuda::ProjectionStorage::kTextureHalf,
    cuda::ProjectionStorage::kTextureHalfMirrored, cuda::ProjectionStorage::kLinear};
// The interpolation a storage is read with.
cuda::BackprojectInterpolation interpolation_of(cuda::ProjectionStorage storage);

// Fills `out` (rows x cols) with a smooth random image on the GPU (seeded by `seed`).
void fill_smooth_random(float* out, DetectorShape shape, unsigned seed, cudaStream_t stream);

}  // namespace slicestream::bench
