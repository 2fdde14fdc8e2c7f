// Which backend runs and how it is set up, chosen once at start-up (server flags and config keys,
// server/README.md). Plain data without CUDA headers: a server built without CUDA reads the same
// options, and make_backend (backend_factory.cpp) hands each backend its part.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "pipeline/backend/name_table.hpp"
#include "pipeline/backend/target_readback.hpp"

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

// How the CUDA backend samples the projection store when it backprojects: kTexture, one
// hardware-filtered fetch from the store's layered texture (8-bit filter weights: a few 1e-4 of the
// slice from the CPU backend, whose error against the object it matches); kExact, fp32 weights on
// fp32 rows in linear memory (the CPU backend to rounding, slower). The store keeps one copy of
// each projection, in the form the choice reads.
enum class CudaInterpolation { kTexture, kExact };
inline constexpr NameTable<CudaInterpolation, 2> kCudaInterpolationNames{
    {{CudaInterpolation::kTexture, "texture"}, {CudaInterpolation::kExact, "exact"}}};

// The texels of the store's texture: fp16 halves the memory and the bytes a backprojection reads
// (each value rounded to 11 significant bits, beyond +-65504 clamped and counted); texture
// interpolation only. fp16-mirrored stores the same fp16 values in pairs, row r beside row
// rows - 1 - r, so that one fetch serves a point of a slice symmetric about the detector's centre
// plane and its mirror image (vertical slices through the middle of a circular scan: half the
// fetches); points of other slices fetch their value from the pair. kAuto: fp16-mirrored with
// texture interpolation (its slices are as close to the object as fp32's, docs/performance.md),
// fp32 rows with exact interpolation.
enum class CudaTexels { kAuto, kFloat32, kFloat16, kFloat16Mirrored };
inline constexpr NameTable<CudaTexels, 4> kCudaTexelsNames{
    {{CudaTexels::kAuto, "auto"},
     {CudaTexels::kFloat32, "fp32"},
     {CudaTexels::kFloat16, "fp16"},
     {CudaTexels::kFloat16Mirrored, "fp16-mirrored"}}};

// How the server's threads wait for the GPU (a slice readback, a pinned staging chunk, a
// synchronize): kSpin polls (the quickest wake-up, a busy core for every waiting thread), kYield
// polls but yields the core, kBlock sleeps until the GPU signals (the core stays free for the
// server's other threads and a detector on the same machine, the wake-up some microseconds
// later), kAuto leaves it to CUDA (it spins while the process has fewer contexts than cores).
enum class CudaHostWait { kAuto, kSpin, kYield, kBlock };
inline constexpr NameTable<CudaHostWait, 4> kCudaHostWaitNames{{{CudaHostWait::kAuto, "auto"},
                                                                {CudaHostWait::kSpin, "spin"},
                                                                {CudaHostWait::kYield, "yield"},
                                                                {CudaHostWait::kBlock, "block"}}};

struct CudaSettings {
  int device = 0;
  // GPU memory left free for the driver, cuFFT plans and other processes when a scan, a target
  // or a slice refiner is admitted (device_memory_budget.hpp).
  std::size_t reserve_bytes = std::size_t{256} << 20;
  CudaInterpolation interpolation = CudaInterpolation::kTexture;
  CudaTexels texels = CudaTexels::kAuto;
  // Each stage's per-frame work as one CUDA graph launch (false: kernel by kernel).
  bool use_graphs = true;
  // Page-locked readback buffers lent to published images at most (beyond: copied out).
  std::size_t readback_lend_bytes = kDefaultReadbackLendBytes;
  CudaHostWait host_wait = CudaHostWait::kAuto;
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
inline const char* to_string(CudaTexels texels) {
  return name_in(kCudaTexelsNames, texels);
}
inline const char* to_string(CudaHostWait wait) {
  return name_in(kCudaHostWaitNames, wait);
}

}  // namespace slicestream
