// Which backend runs and how it is set up, chosen once at start-up (server flags and config keys,
// server/README.md). Plain data without CUDA headers: a server built without CUDA reads the same
// options, and make_backend (backend_factory.cpp) hands each backend its part.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "pipeline/backend/name_table.hpp"

namespace slicestream {

enum class BackendKind { kCpu, kCuda, kAuto };
inline constexpr NameTable<BackendKind, 3> kBackendKindNames{
    {{BackendKind::kCpu, "cpu"}, {BackendKind::kCuda, "cuda"}, {BackendKind::kAuto, "auto"}}};

struct CpuBackendOptions {
  int threads = 0;  // worker threads; <= 0: hardware_concurrency()
  // The host memory budget of either backend (memory_budget.hpp): on the CPU backend the scan,
  // targets and refiners as well; 0: 3/4 of physical memory.
  std::size_t memory_limit_bytes = 0;
};

// How the CUDA backend samples the projection store when it backprojects. All but kTextureLinear
// compute the interpolation weights in fp32 and agree with the CPU backend to rounding;
// kTextureLinear uses the texture unit's filtering (8-bit weights, about 1e-3 per sample). The
// store keeps the linear copy that the choice reads (plain for kLinearMemory, quads for
// kLinearQuads).
enum class CudaInterpolation {
  kLinearMemory,   // four loads from the store's plain linear copy
  kLinearQuads,    // one 16-byte load of the 2x2 texels from the store's quad copy
  kTextureGather,  // one gather of the 2x2 texels from the texture layers (where supported)
  kTexturePoint4,  // four point-sampled texture fetches
  kTextureLinear,  // one hardware-filtered texture fetch
};
inline constexpr NameTable<CudaInterpolation, 5> kCudaInterpolationNames{
    {{CudaInterpolation::kLinearMemory, "linear-memory"},
     {CudaInterpolation::kLinearQuads, "linear-quads"},
     {CudaInterpolation::kTextureGather, "texture-gather"},
     {CudaInterpolation::kTexturePoint4, "texture-point4"},
     {CudaInterpolation::kTextureLinear, "texture-linear"}}};

struct CudaSettings {
  int device = 0;
  // GPU memory left free for the driver, cuFFT plans and other processes when a scan, a target
  // or a slice refiner is admitted (device_memory_budget.hpp).
  std::size_t reserve_bytes = std::size_t{256} << 20;
  CudaInterpolation interpolation = CudaInterpolation::kLinearMemory;
  // Each stage's per-frame work as one CUDA graph launch (false: kernel by kernel).
  bool use_graphs = true;
};

struct BackendOptions {
  CpuBackendOptions cpu;
  CudaSettings cuda;
};

inline const char* to_string(BackendKind kind) {
  return name_in(kBackendKindNames, kind);
}
inline const char* to_string(CudaInterpolation interpolation) {
  return name_in(kCudaInterpolationNames, interpolation);
}

}  // namespace slicestream
